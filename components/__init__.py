"""Reusable ComponentResources, one per concern, each with its typed config model beside it."""
