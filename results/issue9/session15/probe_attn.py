import numpy as np, sys
sys.path.insert(0, ".")
import tefuse
from tests import reference as R
from tests.ops.test_attention import attention_ref
rng = np.random.default_rng(0)
for qs, ks in [((1, 2, 16, 64), (1, 2, 40, 64)), ((1, 2, 64, 128), (1, 2, 40, 128)), ((1, 2, 16, 32), (1, 2, 40, 32)), ((1, 2, 70, 128), (1, 2, 197, 128)), ((1, 2, 16, 128), (1, 2, 40, 128))]:
    q = rng.standard_normal(qs).astype("float16"); k = rng.standard_normal(ks).astype("float16"); v = rng.standard_normal(ks).astype("float16")
    g, f = R.build_op("attention", q, k, v, alpha=0.09)
    y = tefuse.build(g, "cuda").run(*f)[0]
    print(qs, ks, "max abs err", float(np.abs(y.astype(np.float64) - attention_ref(q, k, v, 0.09)).max()), flush=True)
