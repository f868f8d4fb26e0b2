"""How an answer looks: terminal text and Block Kit from the templates, the byline, the "show
devices" table, and what a channel may see of it."""
