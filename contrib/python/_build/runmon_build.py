"""A PEP 517 build backend for runmon's two modules, standard library only.

pip builds a package in an isolated environment and first installs what
[build-system] requires: setuptools, from an index. Offline that fails.
This backend needs nothing, so `pip install ./contrib/python` works in a
fresh venv with no index. It writes what the wheel format asks for (the
binary distribution format, PEP 427; core metadata 2.1; RECORD's hashes
are urlsafe base64 SHA-256 without padding) and an sdist (PEP 517's
tar.gz with PKG-INFO).
"""
import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "runmon-record"
VERSION = "0.1.0"
MODULES = ["runmon_record.py", "runmon_sampler.py"]
SUMMARY = ("Record each training batch's bucket and lengths for runmon, and the stride bucket "
           "sampler that fixes homogeneous batching (standard library only)")
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = NAME.replace("-", "_")
# Fixed times: the same sources give the same archive bytes.
EPOCH = (1980, 1, 1, 0, 0, 0)


def _metadata():
    return ("Metadata-Version: 2.1\n"
            f"Name: {NAME}\nVersion: {VERSION}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.8\n").encode()


def _dist_info(directory):
    info = os.path.join(directory, f"{DIST}-{VERSION}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "wb") as f:
        f.write(_metadata())
    return os.path.basename(info)


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}\n"


def _wheel(wheel_directory, editable):
    files = []
    if editable:  # PEP 660: a .pth file puts the source directory on sys.path
        files.append((f"__editable__.{DIST}.pth", (HERE + "\n").encode()))
    else:
        for module in MODULES:
            with open(os.path.join(HERE, module), "rb") as f:
                files.append((module, f.read()))
    info = f"{DIST}-{VERSION}.dist-info"
    files.append((f"{info}/METADATA", _metadata()))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: runmon_build\n"
                  b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(_record_line(p, d) for p, d in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    name = f"{DIST}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            entry = zipfile.ZipInfo(path, EPOCH)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _dist_info(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _dist_info(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    base = f"{DIST}-{VERSION}"
    name = base + ".tar.gz"
    members = [(name_, open(os.path.join(HERE, name_), "rb").read())
               for name_ in MODULES + ["pyproject.toml", "_build/runmon_build.py"]]
    members.append(("PKG-INFO", _metadata()))
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for path, data in members:
            entry = tarfile.TarInfo(f"{base}/{path}")
            entry.size, entry.mode, entry.mtime = len(data), 0o644, 315532800
            t.addfile(entry, io.BytesIO(data))
    return name
