"""``ember.utils``."""
