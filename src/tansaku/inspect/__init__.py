"""Read-only views of the index for people: `status`, `collection list` and `chunks`.

Each module builds a result type from the config and the store; api.py only opens and passes.
"""
