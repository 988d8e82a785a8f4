"""Offline plan: run the real program for a stack under Pulumi's mock engine and print its graph.

Needs no Pulumi CLI, credentials or network. It shows what the program would register, not what
GCP would accept: provider-side validation and computed outputs are out of its reach.
"""
