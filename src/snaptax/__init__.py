"""snaptax: the performance tax of storage snapshots, measured with fio on real snapshot engines."""
__version__ = "0.1.0"
