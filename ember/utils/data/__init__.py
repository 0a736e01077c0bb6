"""``ember.utils.data`` (placeholder: being written)."""
