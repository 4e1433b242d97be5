from .job import JobForm, parse_ports

__all__ = ["JobForm", "parse_ports"]
