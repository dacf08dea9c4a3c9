"""A demo evalh plugin: a scorer, a target, a provider and a report format."""
