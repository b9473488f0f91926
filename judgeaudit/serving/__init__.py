"""An OpenAI-compatible HTTP server over any model the project can load (the embedded
judges included), as ``judgeaudit serve`` runs it: ``/v1/models``, ``/v1/completions``
(with ``logprobs`` and ``echo``) and ``/v1/chat/completions`` (with ``logprobs`` and
``top_logprobs``). It lets the ``openai`` backend be tested against a real server, and
puts one judge behind an endpoint for tools that speak the OpenAI API.

The modules, each importing only those before it:

- ``schema``: the request bodies and the server's limits;
- ``guard``: who may use the server (API key, Host header) and how large a body may be;
- ``batching``: the engine, a loop decoding greedy requests in one running batch
  (continuous batching, ``judgeaudit.models.continuous``);
- ``engine_process``: that engine in a process of its own;
- ``scoring_batch``: echoed prompts' log-probs, scored in one forward pass as they wait;
- ``app``: the HTTP app, which validates requests and hands them to the engine.
"""
