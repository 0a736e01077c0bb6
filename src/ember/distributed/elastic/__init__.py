"""``ember.distributed.elastic``: the parts of torchelastic that single-process programs import."""
