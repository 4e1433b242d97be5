"""What a request may ask for, whoever asks: a spec, a job, the form, the API."""

MIN_STORAGE_GIB = 2
# What a replica gets when the request leaves storage out.
DEFAULT_STORAGE_GIB = 10
MIN_VGPU_COMPUTE_PERCENT, MAX_VGPU_COMPUTE_PERCENT = 1, 100
# A distributed job runs on at least this many nodes (at most the site's max nodes per job).
MIN_DISTRIBUTED_REPLICAS = 2
