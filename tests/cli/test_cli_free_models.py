"""``trainyard free`` marks the models the account may not use, with the reason (issue 18, 2)."""

from trainyard_cli.output import free_text

REASON = (
    "Your account has no billing enabled, so it may use only the free-tier GPU models (P4), "
    "not V100. Ask an admin to enable billing."
)


def model(name: str, available: bool, reason: str | None = None) -> dict:
    return {
        "name": name,
        "free_cards": 1,
        "total_cards": 1,
        "largest_free_on_one_node": 1,
        "nodes": 1,
        "aggregated": False,
        "supports_vgpu": False,
        "free_vgpu_compute_percent": 0,
        "available_to_you": available,
        "not_available_reason": reason,
    }


def test_free_marks_the_models_the_account_may_not_use_with_the_reason():
    quota = {"limit": None, "used": 0, "free": None}
    free = {
        "as_of": "2026-12-02T01:00:00+00:00",
        "gpu_models": [model("P4", True), model("V100", False, REASON)],
        "cpu": {
            "nodes": 1,
            "free_cores": 8,
            "total_cores": 8,
            "largest_free_cores_on_one_node": 8,
            "free_memory_gib": 32,
            "total_memory_gib": 32,
            "largest_free_memory_gib_on_one_node": 32,
        },
        "quota": {"cpu_cores": quota, "memory_gib": quota, "gpu": [], "vgpu_compute_percent": []},
    }
    lines = free_text(free).splitlines()
    header = next(line for line in lines if line.startswith("MODEL"))
    assert "FOR YOU" in header
    assert next(line for line in lines if line.startswith("P4")).split()[-1] == "yes"
    assert next(line for line in lines if line.startswith("V100")).split()[-1] == "no"
    assert f"V100: {REASON}" in lines
