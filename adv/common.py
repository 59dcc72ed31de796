import os, sys, tempfile, importlib
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import dynorm
dynorm.configure(endpoint=os.environ.get("DYNORM_ENDPOINT", "http://127.0.0.1:8615"),
                 table_prefix=os.environ.get("ADV_PREFIX", f"adv15-{os.getpid()}-"))
from tests.migproject import Project, V1, V2, load_v1, widgets, scan_all, body, MODELS_SRC

def new_project(tag):
    root = Path(tempfile.mkdtemp(prefix="adv15"))
    return Project(root, f"advp_{tag}_{os.getpid()}")

def write_src(project, src):
    (project.dir / "models.py").write_text(src)
    name = f"{project.pkg}.models"
    return importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)

def say(ok, what):
    print(("SAFE: " if ok else "BUG: ") + what, flush=True)
