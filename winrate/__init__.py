"""winrate: honest, cluster-robust error bars for LLM evaluation results."""

__version__ = "0.1.0"
