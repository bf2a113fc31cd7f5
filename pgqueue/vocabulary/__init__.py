"""The vocabulary every front end shares: job options, names and number checks.

Pure declarations and checks, no I/O and no driver: the broker's wire reader,
the HTTP route table, the SDK and the engine all read the same rules from here.

- :mod:`~pgqueue.vocabulary.checks`: the one integer / number / duration check;
- :mod:`~pgqueue.vocabulary.names`: queue names, job names, job ids and custom ids;
- :mod:`~pgqueue.vocabulary.states`: job states and failure reasons;
- :mod:`~pgqueue.vocabulary.job_record`: the job record the engine builds and the wire shows;
- :mod:`~pgqueue.vocabulary.job_options`: every job option, declared once;
- :mod:`~pgqueue.vocabulary.docs`: the options table of ``docs/job-options.md``.
"""
