"""Support for evalh's own tests and benchmarks (seeded run simulations). Nothing in evalh's
production code imports it: the loopback mock provider behind `mock:` URLs is `evalh.mock`."""
