"""What the tests use that is not a test: the local LLM server, the SQLite oracle and corpus,
the headless browser, the command-line drafts and the local-model fixtures."""
