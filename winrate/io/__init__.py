"""Reading: comparison logs (:mod:`.logs`), the formats leaderboards publish
(:mod:`.formats`), the bundled datasets (:mod:`.datasets`, fetched by :mod:`.download`) and
simulated logs with known scores (:mod:`.simulate`). Everything downstream reads a
:class:`~winrate.io.logs.ComparisonLog`."""
