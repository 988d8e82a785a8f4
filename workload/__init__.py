"""A team's training job from the stack to a running JobSet: `python -m workload <stack> ...`
renders a JobSet from the stack's config and the graph its program registers, checks it
offline (JobSet CRD, the team's RBAC, Kueue admission, the slice's topology), and submits,
lists, follows and deletes it with the official Kubernetes client.
"""
