"""Reports of an analysis: the leaderboard's tables and JSON (:mod:`.leaderboard`), text
blocks (:mod:`.text`), table formats (:mod:`.tables`), plots (:mod:`.plots`) and the web
page (:mod:`.html_page`)."""
