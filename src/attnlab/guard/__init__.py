"""What meets untrusted code: the replaceable parts and the one swap, the sandbox."""
