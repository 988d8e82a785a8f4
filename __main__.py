"""ai-infra: GCP training capacity for Cloud TPUs and GPUs, built from one stack config."""

import sys

# As plan/__main__.py: cache the SDKs' bytecode on the first run, whatever the environment says.
sys.dont_write_bytecode = False

from stacks import environment, loading  # noqa: E402

env = environment.build(loading.load())
environment.export(env)
