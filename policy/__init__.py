"""ai-infra's CrossGuard policy pack: `rules.py` holds the invariants as plain functions,
`pack.py` wraps them as Pulumi policies, `__main__.py` serves them to `pulumi preview
--policy-pack policy`."""
