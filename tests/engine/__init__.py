"""Engine tests: fidelity against a real vLLM engine (see conftest)."""
