"""``ember.optim`` (placeholder: being written)."""
