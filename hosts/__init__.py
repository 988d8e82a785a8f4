"""`uv run python -m hosts`: run a command on every host of a `tpuVms` entry (each worker of
each slice) or a `gpuClusters` entry (each running VM of its group), through IAP and OS Login
with gcloud's documented `ssh` commands, a bounded number at a time, and collect each host's
exit status and log. Also prints a GPU cluster's hostfile for torchrun and MPI."""
