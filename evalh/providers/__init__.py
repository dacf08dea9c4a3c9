"""Model providers behind one interface: Anthropic (official SDK) and OpenAI-compatible
servers (httpx). Model targets and judges both go through `ProviderClient.chat`, so retries,
rate limits, the response cache and the run's budget apply to every model call."""
