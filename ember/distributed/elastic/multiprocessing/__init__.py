"""``ember.distributed.elastic.multiprocessing``."""
