// tests/unit/spec/tiny_model_build: builds the model tests' tiny-model helper into test_spec too (the
// speculator tests run real decodes on tiny seeded models; one helper, not a copy).
#include "../model/tiny_model.cpp"
