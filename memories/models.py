"""Django loads the app's models from here. Each model lives in its domain's package and is imported from
there (``from memories.items.models import MemoryItem``); this module only makes sure every one is loaded."""

from memories.items import models  # noqa: F401
from memories.learning import models as learning_models  # noqa: F401
from memories.releases import models as releases_models  # noqa: F401
from memories.review import models as review_models  # noqa: F401
from memories.review import policy_models  # noqa: F401
from memories.serving import models as serving_models  # noqa: F401
from memories.trust import models as trust_models  # noqa: F401
from memories.trust import risk_models  # noqa: F401
from memories.trust.actions import models as actions_models  # noqa: F401
from memories.trust.anomaly import models as anomaly_models  # noqa: F401
from memories.trust.provenance import models as provenance_models  # noqa: F401
