"""The fact tables every part reads and none restates: Cloud TPU and GPU shapes (`tpu`, `gpu`),
storage tiers and limits (`storage`), machine shapes (`machines`), the pinned charts' RBAC
and ports (`charts`), the quota names of each kind of capacity (`quota_names`) and the Billing
Catalog's SKU labels (`price_labels`). Pure data with its sources; imports nothing of the
program but its value types."""
