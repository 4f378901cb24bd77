"""The study: config.yaml composed into typed settings, the job plan and the JSON schema made from them."""
