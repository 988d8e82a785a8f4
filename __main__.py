"""ai-infra: a GKE training environment for Cloud TPUs and GPUs, built from one stack config."""

from stacks import config, environment

environment.export(environment.build(config.load()))
