"""The differential harnesses: the oracle every comparison goes through (``oracle``), the
re-inplacing and functionalization harnesses (``reinplace_differential``,
``functionalize_differential``, ``checked``, ``compare``, ``cases``), every pipeline a user has
(``pipelines``; ``compile_pipelines`` with ``compile_runs``, ``compile_oracle``,
``compile_families``, ``compile_programs``, ``inductor_parity``, ``on_device``), campaigns over
many programs (``campaign``, ``worker_pool``), and the self-checks (``broken_passes``)."""
