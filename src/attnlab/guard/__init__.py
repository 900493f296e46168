r"""What meets untrusted input and code.

* :mod:`~attnlab.guard.inputs`: the argument validators of the attention core;
* :mod:`~attnlab.guard.parts`: the replaceable parts of the models and the one swap;
* :mod:`~attnlab.guard.library`: the library's attributes as imported, put in place for a block;
* :mod:`~attnlab.guard.sandbox`: a :class:`~attnlab.guard.sandbox.Session` runs a student's
  function so that nothing it does outlasts the call, with
  :mod:`~attnlab.guard.budget` (the time budget), :mod:`~attnlab.guard.printed` (what it
  prints), :mod:`~attnlab.guard.errors` (what it raises, in one line) and
  :mod:`~attnlab.guard.state` (torch's state and the shared models, put back).
"""
