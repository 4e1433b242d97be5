"""The replica runtime both executors share: folders, mounts, environment, sandbox, network."""
