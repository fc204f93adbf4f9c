"""engram_build is the PEP 517 build backend of engram-client.

It uses the standard library only, so pip builds the package with nothing to
download (pyproject.toml requires no build dependencies): a wheel of the
pure-Python package engram_client, and an sdist of this directory. The name
and version are read from pyproject.toml's [project] table.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "engram_client"


def _project():
    """_project reads name, version, description and requires-python."""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    out = {}
    for key in ("name", "version", "description", "requires-python"):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), section, re.M)
        if m is None:
            raise RuntimeError("pyproject.toml: [project] has no %s" % key)
        out[key] = m.group(1)
    return out


def _dist_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata(p):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % p["name"],
        "Version: %s" % p["version"],
        "Summary: %s" % p["description"],
        "Requires-Python: %s" % p["requires-python"],
        "License: Apache-2.0",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _package_files():
    """_package_files lists the package's .py and py.typed files, sorted."""
    out = []
    base = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py") or fn == "py.typed":
                full = os.path.join(dirpath, fn)
                out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return out


def _record_hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def _dist_info(p):
    return "%s-%s.dist-info" % (_dist_name(p["name"]), p["version"])


def _dist_info_files(p):
    wheel = (
        "Wheel-Version: 1.0\nGenerator: engram_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    ).encode("utf-8")
    return {"METADATA": _metadata(p), "WHEEL": wheel}


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    d = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(d, exist_ok=True)
    for name, data in _dist_info_files(p).items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    return _dist_info(p)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """build_wheel writes py3-none-any wheel of engram_client, with RECORD."""
    p = _project()
    name = "%s-%s-py3-none-any.whl" % (_dist_name(p["name"]), p["version"])
    info = _dist_info(p)
    entries = []
    for arc, full in _package_files():
        with open(full, "rb") as f:
            entries.append((arc, f.read()))
    for fn, data in _dist_info_files(p).items():
        entries.append((info + "/" + fn, data))
    record = io.StringIO()
    for arc, data in entries:
        record.write("%s,%s,%d\n" % (arc, _record_hash(data), len(data)))
    record.write("%s/RECORD,,\n" % info)
    entries.append((info + "/RECORD", record.getvalue().encode("utf-8")))
    path = os.path.join(wheel_directory, name)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in entries:
            zi = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            zf.writestr(zi, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    """build_sdist writes a .tar.gz of this directory's sources and PKG-INFO."""
    p = _project()
    base = "%s-%s" % (_dist_name(p["name"]), p["version"])
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for dirpath, dirnames, filenames in os.walk(ROOT):
            dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "build", "dist") and not d.startswith("."))
            for fn in sorted(filenames):
                if fn.endswith((".pyc", ".whl", ".tar.gz")):
                    continue
                full = os.path.join(dirpath, fn)
                tf.add(full, arcname=base + "/" + os.path.relpath(full, ROOT).replace(os.sep, "/"))
        data = _metadata(p)
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(data)
        tf.addfile(ti, io.BytesIO(data))
    return name
