"""Answers nobody had to ask for: stuck GPU pods and Alertmanager alerts, posted where the
cause word's route says (a Slack channel with a mention, a webhook receiving the Verdict)."""
