from resources.vector import ResourceVector, gpu_key


def test_fits_is_one_comparison_over_every_key():
    node = ResourceVector({"cpu_milli": 96_000, "memory_mib": 1024, gpu_key("V100"): 8})
    assert ResourceVector({gpu_key("V100"): 8, "cpu_milli": 1}).fits(node)
    assert not ResourceVector({gpu_key("V100"): 9}).fits(node)
    assert not ResourceVector({gpu_key("P4"): 1}).fits(node)


def test_arithmetic_and_missing_keys_are_zero():
    a = ResourceVector(cpu_milli=1000, memory_mib=2048)
    b = ResourceVector(cpu_milli=500)
    assert a + b == {"cpu_milli": 1500, "memory_mib": 2048}
    assert (a - b)["cpu_milli"] == 500
    assert (b * 3)["cpu_milli"] == 1500
    assert a["storage_gib"] == 0


def test_limits_treat_missing_keys_as_unlimited():
    used = ResourceVector({gpu_key("V100"): 6, "cpu_milli": 10**9})
    limits = {gpu_key("V100"): 8}
    assert used.fits_limits(limits)
    assert (used + {gpu_key("V100"): 4}).exceeded_limits(limits) == [gpu_key("V100")]


def test_shortfalls_name_the_missing_resources():
    need = ResourceVector({gpu_key("V100"): 16, "cpu_milli": 1000})
    have = {gpu_key("V100"): 8, "cpu_milli": 2000}
    assert need.shortfalls(have) == [gpu_key("V100")]
