"""Per-environment composition: the config schema and the wiring of components from it."""
