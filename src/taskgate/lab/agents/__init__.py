"""Who acts in an episode: the agent, the matcher and the compiler (scripted or model-backed)."""
