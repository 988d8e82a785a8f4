"""ai-infra: GCP training capacity for Cloud TPUs and GPUs, built from one stack config."""

from stacks import environment, loading

env = environment.build(loading.load())
environment.export(env)
