# ruff: noqa: E501 (test ids)
"""Seconds each slow Slurm test took (setup, call and teardown) in one stream, for balancing.

From a fresh-clone `make test PYTEST_ARGS="--durations=0"` with the Slurm tests in one
stream (2026-12-02); a test not listed counts as ``OTHER_SECONDS``. Refresh it when a
stream runs long: it only balances the two streams, nothing fails on a stale figure.
"""

OTHER_SECONDS = 2.0

SECONDS = {
    "tests/test_slurm_lifecycle.py::test_max_run_time_ends_timed_out_through_slurms_time_limit": 65.0,
    "tests/faults/test_slurm_outage.py::test_jobs_outlive_a_controller_outage_each_run_once_and_billed_once": 39.8,
    "tests/test_job_network.py::test_job_reaches_no_service_of_the_host_or_the_platform_on_any_address[slurm]": 9.0,
    "tests/test_job_network.py::test_a_job_reaches_another_job_only_at_its_published_ports[slurm]": 9.0,
    "tests/test_slurm_lifecycle.py::test_job_outlives_a_controller_outage_and_ends_right": 31.4,
    "tests/test_job_storage.py::test_writing_past_the_storage_limit_ends_the_job_with_that_reason[slurm]": 23.4,
    "tests/test_job_storage.py::test_output_and_tmp_count_together[slurm]": 18.1,
    "tests/test_hostile_jobs.py::test_fork_bomb_stops_at_the_process_limit_and_neighbours_run_on[slurm]": 15.4,
    "tests/test_job_storage.py::test_a_job_within_its_storage_succeeds[slurm]": 14.8,
    "tests/test_slurm_lifecycle.py::test_distributed_replica_failure_restarts_both_replicas_in_a_new_slurm_job": 14.5,
    "tests/test_slurm_run.py::test_a_slurm_node_that_cannot_isolate_runs_no_job": 12.3,
    "tests/test_job_network.py::test_job_reaches_no_port_the_host_listens_on_at_any_address[slurm]": 11.8,
    "tests/test_slurm_run.py::test_two_node_job_starts_both_replicas_in_one_slurm_job_and_all_reduces": 11.3,
    "tests/test_slurm_lifecycle.py::test_node_failure_loses_the_attempt_unbilled_and_places_the_job_again": 10.9,
    "tests/test_slurm_inventory.py::test_sync_creates_one_slurm_node_per_node_of_the_partition": 9.1,
    "tests/test_slurm_lifecycle.py::test_stop_cancels_the_slurm_job_and_ends_stopped": 8.8,
    "tests/test_hostile_jobs.py::test_job_cannot_read_or_see_another_jobs_output_or_processes[slurm]": 8.5,
    "tests/test_hostile_jobs.py::test_job_cannot_write_outside_its_output_folder[slurm]": 8.4,
    "tests/test_hostile_jobs.py::test_job_cannot_read_the_platforms_settings_secrets_database_or_root[slurm]": 7.2,
    "tests/test_slurm_run.py::test_no_platform_secret_reaches_the_slurm_job": 7.0,
    "tests/test_slurm_run.py::test_one_card_job_runs_as_a_pinned_slurm_job_with_the_local_environment": 6.6,
    "tests/test_job_network.py::test_an_open_port_is_published_at_its_host_port[slurm]": 6.5,
    "tests/test_hostile_jobs.py::test_job_learns_no_host_path_from_its_sandbox[slurm]": 6.0,
}
