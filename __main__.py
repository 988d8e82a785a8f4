"""ai-infra: a GKE training environment for Cloud TPUs and GPUs, built from one stack config."""

from stacks import config, environment

env = environment.build(config.load())
environment.export(env)
