"""One reading of a recorded plan graph, below the plan, the cost and preflight: the graph as
values (`model`), one constant per resource type (`types`), and what each resource provides
(`capacity`). Imports none of `plan`, `prices` or `preflight`."""
