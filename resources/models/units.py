"""Units kept in the database: MiB and millicores, shown as GiB and cores, exactly."""

from decimal import Decimal

MIB_PER_GIB = 1024
MILLI_PER_CORE = 1000


def exact_decimal(number: Decimal) -> Decimal:
    """``number`` with every decimal it has, no trailing zero, no exponent (64, not 6.4E+1)."""
    number = number.normalize()
    return number.quantize(Decimal(1)) if number == number.to_integral_value() else number


def exact_gib(mib: int) -> Decimal:
    """MiB as GiB with every decimal it has (a MiB is 2⁻¹⁰ GiB: at most ten decimals)."""
    return exact_decimal(Decimal(mib) / MIB_PER_GIB)
