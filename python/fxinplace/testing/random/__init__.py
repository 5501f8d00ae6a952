"""Random programs: the generator (``programs``, built by ``builder`` from ``ops``, ``views``,
``writes``, ``inputs``, ``rejections``, ``compile_statements`` and ``custom_ops``, run while built
by ``env``), the programs the stock implementations get right (``stock_programs``), shrinking a
failing one (``minimize``), and the known failures of the pipeline run (``known_failures``)."""
