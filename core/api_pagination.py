"""How the API's lists page: ``limit`` and ``offset``, each within what the database takes."""

from ninja import Field, Schema
from ninja.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    """Ninja's limit / offset with an upper bound on both (an unbounded offset overflows SQL)."""

    class Input(Schema):
        limit: int = Field(100, ge=1, le=1000)
        offset: int = Field(0, ge=0, le=2**31 - 1)
