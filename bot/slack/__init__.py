"""The Slack app (one bolt App for HTTP and Socket Mode) and its listeners, grouped by kind."""
