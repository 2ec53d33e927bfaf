import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Users are created by the dozen here; PBKDF2's deliberate slowness buys nothing in tests.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
