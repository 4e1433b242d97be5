"""Which addresses the host's table closes to jobs beyond the host's own: the platform's."""

from jobs.execution.replica.host_network import platform_addresses

SLURM_CONF = """ClusterName=site
SlurmctldHost=ctl-a(10.9.9.9)
SlurmctldHost=10.9.9.10
# SlurmctldHost=10.9.9.11 is a comment
NodeName=gpu01 NodeAddr=10.1.0.5
"""


def test_the_slurm_controllers_of_the_sites_slurm_conf_are_platform_addresses(settings, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text(SLURM_CONF)
    settings.TRAINYARD_SLURM_ENABLED = True
    settings.TRAINYARD_SLURM_CONF = str(conf)
    closed = platform_addresses()
    assert "10.9.9.9/32" in closed and "10.9.9.10/32" in closed
    assert "10.9.9.11/32" not in closed and "10.1.0.5/32" not in closed


def test_without_slurm_no_controller_is_looked_for(settings, tmp_path):
    settings.TRAINYARD_SLURM_ENABLED = False
    settings.TRAINYARD_SLURM_CONF = str(tmp_path / "missing.conf")
    assert "169.254.0.0/16" in platform_addresses()
