"""``ember.nn.utils``: gradient clipping, parameter vectors (placeholder)."""
