"""What the question asks about, and whether a finding can answer it (pure: text and findings in, judgments out).

A question names a symptom: throughput, per-token latency (itl), time to first token (ttft), start-up / load time,
a regression after a change, errors (crashes, hangs, wrong output) or cost. `asked()` reads it from the question and
the observations' notes; every finding states the symptoms it can explain (`Finding.symptoms`, from its catalog
entry or its rule; `category_symptoms` stands in where neither says), and `explains()` says whether it can explain
what was asked. The synthesis ranks only those; the rest is "also noticed".

Some findings hold on every host of a kind whatever the workload does (an architecture's missing instructions, a
cache that is not persisted): they are `about` a subject and are ranked only when the question is about it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence, get_args

from orchestrator.findings import Finding, Symptom

if TYPE_CHECKING:
    from orchestrator.analysis.evidence_view import EvidenceView
    from orchestrator.observations import Observations

SYMPTOMS: tuple[Symptom, ...] = get_args(Symptom)

_PATTERNS: tuple[tuple[Symptom, str], ...] = (
    ("ttft", r"\bttft\b|time[- ]to[- ]first[- ]token|(?:first|1st)[- ]token|\bprefill\b|prompt processing|long prompts?|"
             r"requests? (?:queue|wait)|slower to answer|first requests?"),
    ("itl", r"\bitl\b|\btpot\b|inter[- ]token|per[- ]token|time per output token|"
            r"token latency|streaming|\bdecod(?:e|es|ing)\b|tokens? arrive|gaps? between tokens|\bstutter|"
            r"hiccups?|\bstalls?\b"),
    ("startup", r"start[- ]?up|\bstart(?:s|ing)? (?:slowly|slow)|takes? .{0,30}\bto (?:start|load|come up|boot|be ready)|"
                r"\bload(?:ing)? (?:time|the model|weights|is slow)|model load|cold start|long warm[- ]?up|"
                r"warm[- ]?up (?:takes|is slow|time)|"
                r"(?:every|each) (?:start|restart|launch|boot)|first (?:few )?minutes?|"
                r"compil(?:e|es|ing|ation) (?:time|again|on every)|"
                r"recompil|before serving|\bboot\b|restarts? (?:take|takes|is slow|are slow)|time to ready|readiness|"
                r"(?:become|becomes|get|gets|be) ready|"
                r"\bload(?:s|ing)?\b.{0,40}\b(?:take|takes|took|times? out|timed out|minutes|hours)|"
                r"\bloading\b.{0,15}\b(?:a )?(?:long time|forever|ages)"),
    ("regression", r"\bafter (?:we |an? |the )?(?:upgrad|updat|deploy|mov|switch|migrat|chang|reboot|bump|install|"
                   r"maintenance)|\bsince (?:we|the|upgrad|updat|yesterday|last|this)|regress|used to|\bgot slower|"
                   r"became slower|slower than (?:before|last|yesterday)|\bdropped\b|\bdoubled\b|\bhalved\b|"
                   r"went (?:down|up)|suddenly|this (?:morning|afternoon|week)|without a deploy|\bis down\b|"
                   r"compared to (?:before|last)|\bnew version|\brevert"),
    ("errors", r"crash|\bhangs?\b|\bhung\b|\bstuck\b|\bfail|\berrors?\b|\boom\b|out of memory|\bnans?\b|garbage|"
               r"(?:wrong|bad|incorrect) (?:outputs?|answers?|results?)|unresponsive|not responding|\bfreez\w*|"
               r"keeps? restarting|\bkilled\b|\bdie[sd]?\b|\bxid\b|segfault|illegal|"
               r"exception|(?:won'?t|doesn'?t|can'?t|cannot|does not|will not) (?:start|launch|load)|refuses|"
               r"\breject(?:s|ed|ing)?\b(?!\W+(?:drafts?|tokens?|speculat))|\brefused\b|bad request|\bhttp ?[45]\d\d\b|\b[45]\d\d (?:errors?|responses?)|"
               r"is (?:it|the(?: \w+){1,3}) (?:healthy|broken|faulty)|unhealthy|\bbroken\b|\bfaulty\b|anything wrong|"
               r"health ?check|before we put it"),
    ("cost", r"\bcosts?\b|\$|dollar|\bprice|cheaper|expensive|per million tokens|how many gpus|\btco\b|"
             r"\bgpu[- ]?hours?\b|\b(?:pay|paying|paid)\b|\bbill(?:ed|ing)?\b|\bbudget|\bmoney\b|"
             r"\bcents?\b|\bcheap\b|\boverpa(?:y|ying|id)\b"),
    ("throughput", r"throughput|tok(?:ens)?/s|tokens? (?:per|a) second|req(?:uests)?/s|requests? per second|\bqps\b|"
                   r"\d\s*(?:k\s*)?(?:embeddings|images|documents|docs|items|inputs|queries|completions|samples)"
                   r"(?:/s(?:ec)?\b| (?:per|a) second\b)|"
                   r"\bscal(?:e|es|ing)\b|tflops|below (?:the )?(?:spec|peak)|"
                   r"spec sheet|bandwidth|all-reduce|all-gather|collectives|(?<!memory )(?<!memory_)utili[sz]ation"),
)
_WORDS: list[tuple[Symptom, re.Pattern[str]]] = [(sym, re.compile(p, re.IGNORECASE)) for sym, p in _PATTERNS]

_GENERIC = re.compile(r"underperform|below (?:the )?expected|crawling|no faster|(?:barely|hardly|not much) faster|"
                      r"slower than|\bslow(?:er|ness|ly|s|ing|ed)?\b|\bfast(?:er)?\b|\bperf(?:ormance)?\b|\bspeed(?:s|up)?\b|"
                      r"\bsluggish\b|\blag(?:s|gy)?\b|\bperform(?:s|ing)?\b.{0,12}\b(?:well|worse|badly|poorly|better)\b",
                      re.IGNORECASE)
"""Words that say something is slow without saying what: read as throughput, but uncertainly (a finding that explains
per-token latency or time to first token is not demoted on their strength alone)."""

_TAG = re.compile(r"^\s*(?:\[[^\]\n]{1,40}\]\s*:?\s*|(?:bug|misc\.? bug|question|feature|perf|performance|usage)\s*:\s*)+",
                  re.IGNORECASE)
"""An issue template's leading tag ("[Performance]:", "[Bug]:", "Misc. bug:"): the tracker's category, not what the
user says is slow."""

_PROMPT_PHASE = re.compile(
    r"\b(?:prompts?|context|input|prefill)\s+(?:tokens?\s+)?(?:load(?:ing)?|processing|process(?:es|ed)?|eval(?:uation)?|"
    r"ingest\w*|encod\w*)\b|\b(?:prompts?|context|input)\b.{0,30}\b(?:re-?process\w*|re-?evaluat\w*|re-?comput\w*)|"
    r"\b(?:until|before)\s+(?:the\s+)?(?:generation|output|response|answer|streaming|first \w+)\s*(?:starts?|begins?)?",
    re.IGNORECASE)
"""The phase before the first token, named by what it works on (the prompt / context / input being loaded,
processed, evaluated or recomputed) or by what it precedes ("until generation starts", "before generation"): time
to first token, never start-up, whatever the verb ("context load time before generation")."""

_ANSWER_STARTS = re.compile(
    r"\bstart(?:s|ed|ing)?\s+(?:to\s+)?(?:answer|respond|repl[yi]|stream|generat|typ|produc|emit|print|writ|talk|spit)\w*|"
    r"\b(?:responses?|answers?|repl(?:y|ies)|streams?|streaming|tokens?|text|words?|completions?)\s+(?:\w+\s+){0,2}?"
    r"(?:start|begin)(?:s|ed|ning)?\b", re.IGNORECASE)
"""The answer starting ("the model starts answering after 4 s", "responses start slowly"): the time to the first
token of each request, not the server's start-up."""

_ANSWER_READY = re.compile(
    r"\b(?:answers?|responses?|repl(?:y|ies)|results?|outputs?|summar(?:y|ies)|completions?|messages?)\b(?:\s+\w+){0,3}?"
    r"\s+(?:is|are|be|becomes?|gets?|got)\s+ready\b|"
    r"\bload(?:s|ed|ing)?\s+(?:the\s+|each\s+|a\s+|every\s+|an\s+)?(?:answers?|repl(?:y|ies)|responses?|pages?|results?|"
    r"outputs?|messages?|chats?)\b", re.IGNORECASE)
"""An answer being ready or loading ("each answer to be ready within 2 s", "takes 10 s to load each answer"): the
request's time, not the server's start-up."""

_STARTUP_PHASE = re.compile(
    r"\b(?:slow|long|fast(?:er)?|speed(?: up)?|accelerat\w*|parallel\w*)\b.{0,15}\b(?:model|server|engine|weights?|"
    r"checkpoint|module|graph|shard)s?\b.{0,15}\b(?:load(?:ing|s)?|launch(?:ing|es)?|boot(?:ing|s)?|start(?:ing|s)?)\b|"
    r"\bload(?:ing|s)?\b.{0,12}\b(?:model|weights?|checkpoint|shard)s?\b.{0,12}\b(?:fast(?:er)?|slow(?:ly)?)\b|"
    r"\b(?:model|server|engine|pod|container|service|weights?|checkpoint|instance|worker|module|graph|shard)s?\b.{0,20}"
    r"\b(?:start(?:ing|s)?|load(?:ing|s)?|boot(?:ing|s)?|launch(?:ing|es)?|initiali[sz](?:ing|ation|es)|"
    r"init)\b.{0,25}\b(?:long|slow(?:ly)?|ages|forever|minutes?|hours?|seconds?|time|speed)\b|"
    r"\b(?:model|server|engine|pod|container|service|instance|worker)s?\b.{0,20}\b(?:takes?|took|taking)\b.{0,25}"
    r"\b(?:start|load|boot|launch|initiali[sz])\w*|"
    r"\b(?:graph captur\w*|captur\w* (?:cuda )?graphs?|cuda ?graphs? captur\w*|initiali[sz]ation|warm-?up|download\w*)\b"
    r".{0,25}\b(?:long|slow(?:ly)?|ages|forever|minutes?|hours?|seconds?|time)\b",
    re.IGNORECASE)
"""Start-up named by its subject and a measure of time: the model / server / engine starting, loading, booting or
initialising (for long, slowly, minutes, its speed), or a phase only start-up has (CUDA-graph capture,
initialisation, warm-up, the download) taking time."""

_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:\.?post\d+|rc\d+)?|(?<![\w.])v\d+\.\d+(?:\.\d+)*", re.IGNORECASE)
"""A software version: three parts (0.6.3, 0.4.0.post1) or v-prefixed (v2.0): not a model's "3.1" or a "2.5 tok/s"."""
_VERSION_PAIR = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+|\.\*)*\S*\s*(?:=>|->|\u2192|\bto\b|\band\b|\bvs\.?|\bversus\b)"
                           r"\s*v?\d+\.\d+", re.IGNORECASE)
"""Two versions set against each other ("0.6.0 => 0.6.3", "from 0.4 to 0.6", "0.10 vs 0.12")."""
_CHANGE = re.compile(r"\b(?:new(?:er|est)?|latest|old(?:er)?|previous)\s+(?:\w+\s+)?versions?\b|\bdegradation\b|"
                     r"\b(?:upgrad\w*|downgrad\w*)\b|\bbecom\w* (?:slower|worse)|"
                     r"\b(?:slower|faster|worse|better|higher|lower)\b.{0,40}\bthan\b.{0,20}" + r"(?:v?\d+\.\d+|\bv\d+\b)",
                     re.IGNORECASE)
"""A regression named by its structure: two versions compared ("between 0.10.2 and 0.12.0", "v2.0.7 slower than
v2.0.6", "0.6.0 => 0.6.3"), a newer or older version named, a degradation, an upgrade."""

_AFTER_CHANGE = re.compile(r"\bafter (?:we |an? |the )?(?:upgrad|updat|deploy|mov|switch|migrat|chang|reboot|bump|"
                           r"install|maintenance)\w*", re.IGNORECASE)
"""A change named as the time things are measured from ("after switching to base64"): a regression only when the
question also says something got worse."""
_REGRESSION_NOT_AFTER = re.compile(_PATTERNS[3][1].replace(
    r"\bafter (?:we |an? |the )?(?:upgrad|updat|deploy|mov|switch|migrat|chang|reboot|bump|install|maintenance)|", ""),
    re.IGNORECASE)
_WORSE = re.compile(r"\bslow|\bworse|\bdrop|\bdegrad|\bregress|\bdecreas|\bincreas|\blower\b|\bhigher\b|\blonger\b|"
                    r"\bless\b|\bdoubl|\bhalv|\bfell\b|\bfall|\bspik|\bjump|\bhurt|\bbroke|\bfail|\berror|\bcrash|"
                    r"\bhang|\bstuck|\btime ?outs?\b|\boom\b|\bstall|\blag|\bproblem|\bissue|\bwrong|\bbad\b|\bpoor",
                    re.IGNORECASE)
"""Words that say something got worse (or fails): what makes a change named in the question a regression."""
_BETTER = re.compile(r"\bstill\b|\bimprov|\bfaster\b|\bbetter\b|\bfixed\b|\bhelped\b|\bresolved\b", re.IGNORECASE)
"""Words that make a change the fix being checked ("is the network still the limit?", "it got faster"), not the
cause of a slowdown."""

_PRICE_PER_TOKEN = re.compile(
    r"(?:\$\s*[\d.,]*|\b(?:costs?|price[sd]?|dollars?|cents?)\b)\s*(?:/|\bper\b|\ban?\b|\beach\b)\s*"
    r"(?:(?:1\s*)?[mk]\b|million\b|thousand\b|[\d,]+)?\s*(?:(?:output|input|generated)\s+)?tokens?\b", re.IGNORECASE)
"""A price per token ("cost per token", "$2 per million tokens", "$/1M tokens"): cost, not the time per token."""

_FIGURE_ITL = re.compile(r"\d\s*(?:ms|s|milliseconds?|seconds?)\s*(?:/|per|a|each)\s*(?:output\s+)?token", re.IGNORECASE)
"""A per-token time the user quotes ("200 ms per token")."""

_LOW_RATE = re.compile(r"\b(?:generation|output|tokens?|inference|serving|\w*put)\b.{0,12}\b(?:is|are|too|very|so)\s+"
                       r"(?:low|poor|bad)\b|\b(?:low|poor)\s+(?:generation|output|token|inference|serving)\b",
                       re.IGNORECASE)
"""A rate that is low: the adjective low / poor on what is produced (generation, output, tokens; a misspelt
"...put"), i.e. throughput whatever the spelling of the metric."""


_REFERENCE = re.compile(r"\b(?:published|reported|advertised|official|expected|reference|others (?:get|see|report)|"
                        r"should (?:be|get|see)|vendor'?s?|claimed)\b[^.?!\n]{0,80}?\d", re.IGNORECASE)
"""A figure the user compares with: a published, advertised or expected one ("published numbers ... are ~4 ms per
token")."""
_COMPARED = re.compile(r"\d+(?:\.\d+)?\s*x\s+(?:slower|faster|worse|lower|higher|more|less)\b|\b(?:slower|faster|worse)\b",
                       re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.?!;](?=\s|$)|\n")
_QUOTED = re.compile(r"\d[\d.,]*\s*(?:ms|s|sec|seconds?|milliseconds?|tok(?:ens)?/s)\b", re.IGNORECASE)


def _compared_only(text: str, found: set[Symptom]) -> set[Symptom]:
    """The symptoms to keep where the question sets one figure against a reference and says how much slower: the
    reference's symptom, and not another timing the user merely quotes beside it as context ("17.2 ms per output token
    and 0.2 s TTFT ... published numbers are ~4 ms per token. why are we 4x slower?": per-token latency, not TTFT)."""
    ref = _REFERENCE.search(text)
    if ref is None or not _COMPARED.search(text):
        return found
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    start = max([i for i in ends if i <= ref.start()] or [0])
    stop = min([i for i in ends if i > ref.end()] or [len(text)])
    clause = text[start:stop]
    named = {s for s, rx in _WORDS if rx.search(clause)} | ({"itl"} if _FIGURE_ITL.search(clause) else set())
    named &= {"ttft", "itl", "throughput"}
    if len(named) != 1:
        return found
    out = set(found)
    for s, rx in _WORDS:
        if s in named or s not in out or s not in ("ttft", "itl", "throughput"):
            continue
        hits = list(rx.finditer(text))
        if hits and all(_QUOTED.search(text[max(0, m.start() - 16): m.end() + 16]) for m in hits):
            out.discard(s)  # named only beside its own figure: context, not the complaint
    return out


def _before_after(observations: "Observations") -> bool:
    """Two runs (or two benchmarks) of the same shape under different labels: a before/after pair, i.e. a
    regression question, whatever the words (TP4 against TP8, or one concurrency against another, is not)."""
    def pairs(items: "Sequence[tuple[tuple[object, ...], str | None]]") -> bool:
        seen: dict[tuple[object, ...], set[str | None]] = {}
        for shape, label in items:
            seen.setdefault(shape, set()).add(label)
        return any(len(labels) >= 2 for labels in seen.values())
    runs = [((r.tp, r.pp, r.ep, r.dp, r.concurrency, r.batch, r.input_len, r.output_len), r.label)
            for r in observations.runs if r.label]
    bench = [((b.request_rate, b.max_concurrency, b.input_len, b.output_len), b.label)
             for b in observations.bench if b.label]
    return pairs(runs) or pairs(bench)

_LATENCY = re.compile(r"\blatency\b|\bresponsive|\bsnappy\b|\binference time\b|\bresponse times?\b|"
                      r"\b(?:answer|respond|repl[iy])\w*\s+(?:\w+\s+)?slow(?:ly)?\b|"
                      r"\bend[- ]to[- ]end\b|\be2el?\b|\brequest (?:time|duration)s?\b|"
                      r"\b(?:take|takes|took|taking)\b.{0,30}\bto (?:finish|complete|return|come back|respond)\b",
                      re.IGNORECASE)
"""Latency without saying which: per-token latency and time to first token both (the whole request's time, "takes
a minute to finish", is their sum)."""

_FINE = re.compile(r"\b(?:(?:per[- ]token|inter[- ]token|first[- ]token|token|decode|prefill|e2e|end[- ]to[- ]end)\s+)?"
                   r"(?:throughput|latency|performance|speed|ttft|itl|tpot|startup|decode|decoding|prefill)\s+"
                   r"(?:looks|is|seems|are|stays?|remains?)\s+(?:fine|ok|okay|good|normal|great|fast|quick|snappy)\b|"
                   r"\b(?:work|works|working|run|runs|running)\s+(?:fine|ok|okay|well)\s+and\s+(?:fast|quick)\b",
                   re.IGNORECASE)

_WHETHER = re.compile(r"(?:make sure|ensure|check|verify|whether|\bif\b|know)\W+(?:\S+\W+){0,5}$", re.IGNORECASE)


def _unless_asked(m: re.Match[str]) -> str:
    """"Throughput is fine" said of the system is not asked about; "make sure the performance is ok" asks it."""
    return m.group(0) if _WHETHER.search(m.string[max(0, m.start() - 60): m.start()]) else " "


_SPECIFIC = ("ttft", "itl", "startup", "cost")
"""Symptoms that, when named, make a generic "slow" mean them rather than throughput."""

_ABOUT: dict[str, re.Pattern[str]] = {
    "kernel": re.compile(r"kernel|gemm|tensor core|wgmma|\btma\b|tcgen05|\bfp4\b|\bfp8\b|nvfp4|mxfp4|\bint[48]\b|"
                         r"\bw4a|dtype|quantiz|architecture|\bsm_?\d+|compute capability|spec|tflops|cutlass|triton|"
                         r"marlin|flashinfer|deepgemm|shared memory|instruction", re.IGNORECASE),
    "cache": re.compile(r"autotun|(?<!fine-)(?<!fine )\btun(?:ed|ing)\b|compil|\bjit\b|"
                       r"\b(?:kernels?|triton|inductor|deepgemm|flashinfer|cutlass|torch|cuda|tuning)\W+(?:\w+\W+){0,2}?cach|"
                       r"\bcach\w*\W+(?:\w+\W+){0,3}?(?:surviv|restart|lost|wiped|ephemeral|/tmp)|"
                       r"\bpersist\w*\W+(?:\w+\W+){0,3}?(?:cach|tun|results?\b|compil)", re.IGNORECASE),
}
"""Subjects a question can be about (words that name them). The cache is the kernels' (autotune results, JIT and
compile caches) and whether it is kept: a response cache, a prefix cache or a persistent connection is not it."""


def about(f: Finding) -> str | None:
    """The subject a finding is boilerplate about (true of every host of its kind, whatever the workload does), or
    None: an architecture's missing instructions against its datacenter peer (rules.arch_vs_peer, ids `arch-*`);
    autotune results or JIT caches that are not persisted (a start-up matter, on a host that may serve fine)."""
    if f.id.startswith("arch-") and f.rule in ("arch_vs_peer", ""):
        return "kernel"
    if f.entry in ("autotune-not-persisted", "jit-cache-dir-ephemeral"):
        return "cache"
    return None


def category_symptoms(category: str) -> list[Symptom]:
    """What a finding of this category can explain when neither its rule nor a catalog entry says."""
    if category == "jit-cache":
        return ["startup"]
    if category in ("hardware", "environment", "other"):
        return []
    return ["throughput", "itl", "ttft"]


def symptoms_of(f: Finding) -> list[Symptom]:
    return list(f.symptoms) or category_symptoms(f.category)


@dataclass(frozen=True)
class Asked:
    """What the question asks about: its symptoms (empty: none named, e.g. "is anything wrong with this box?"), those
    of them named for certain (by a specific word or by what the user measured and compares; the rest come from a
    generic "slow"), the subjects it names, and the paths the evidence shows from one symptom to another."""

    symptoms: frozenset[Symptom] = frozenset()
    subjects: frozenset[str] = frozenset()
    text: str = field(default="", compare=False)
    certain: frozenset[Symptom] = field(default=frozenset(), compare=False)
    """The symptoms a specific word or the user's own figures name ("TTFT", "tok/s", runs at two TP degrees)."""
    via: frozenset[tuple[Symptom, Symptom]] = field(default=frozenset({("itl", "throughput")}), compare=False)
    """(a, b): the evidence shows how what explains a explains b too (requests queue: what limits throughput sets
    time to first token)."""
    minor: tuple[tuple[Symptom, str], ...] = field(default=(), compare=False)
    """Terms the question quoted that are a small share of each request's time in every run the user gave, with the
    arithmetic (`minor_terms`): not asked about, since what explains them alone cannot explain the request's time."""

    @property
    def uncertain(self) -> bool:
        """Whether the reading rests on generic words alone ("why is it slow?"): no finding is demoted on its strength."""
        return bool(self.symptoms) and not self.certain

    def explains(self, f: Finding) -> bool:
        """Whether f can explain what was asked: it states an asked symptom, or one the evidence links to an asked one,
        or the reading is uncertain; a property that holds before and after cannot explain a regression; what holds
        on every host of a kind is ranked only when the question is about it."""
        subject = about(f)
        if subject is not None:  # a cache that is not persisted costs start-up time, and nothing else
            return subject in self.subjects or (subject == "cache" and "startup" in self.symptoms)
        if not self.symptoms:
            return True
        if f.static and self.symptoms <= {"regression", "throughput", "itl", "ttft", "cost"} and \
                "regression" in self.certain:
            return False  # the same before and after the change: it cannot be what changed
        if self.stated(f):
            return True
        return self.uncertain and bool(set(symptoms_of(f)) & {"throughput", "itl", "ttft"})

    def stated(self, f: Finding) -> bool:
        """Whether f can explain a symptom the question names: it states one, or (a shortfall, not the other phase's
        context) one the evidence links to it."""
        mine = set(symptoms_of(f))
        if not self.symptoms:
            return True
        linked = not f.secondary and not f.informational and \
            any((a, b) in self.via for a in mine for b in self.symptoms)
        if self.symptoms & (mine - {"regression"}):
            return True
        if "regression" in self.symptoms & mine and not self._other_term(mine):
            return True
        return linked

    def _other_term(self, mine: set[Symptom]) -> bool:
        """Whether a finding that explains a change explains the change of another term than the one the question
        names for certain (a TTFT that differs between two runs, asked why the ITL and the throughput changed): what
        changed must be what was asked about, directly or by a path the evidence shows."""
        terms = {"ttft", "itl", "throughput", "startup"}
        named, its = self.certain & self.symptoms & terms, mine & terms
        return bool(named and its) and not any(a == b or (a, b) in self.via for a in its for b in named)

    def words(self) -> str:
        """The asked symptoms as a reader says them ("time to first token", "throughput")."""
        return ", ".join(SAY[s] for s in SYMPTOMS if s in self.symptoms) or "the question"


SAY: dict[Symptom, str] = {"throughput": "throughput", "itl": "per-token latency", "ttft": "time to first token",
                           "startup": "start-up time", "regression": "a regression", "errors": "errors or crashes",
                           "cost": "cost"}


_WORKER_ROLE = re.compile(r"(?i)\bdecode(?=[- ](?:workers?|nodes?|instances?|pods?|servers?|engines?|side|pool)\b)")
""""Decode" naming a worker of a disaggregated deployment (the place that streams the answer), not the decode phase
as a symptom: "prefill and decode workers on two nodes" asks about nothing per token."""


def asked(question: str, observations: "Observations | None" = None) -> Asked:
    """The symptoms and subjects of a question (and of the observations' notes), and those of them named for certain:
    by a specific word, or by what the observations measured and compare."""
    text = question
    if observations is not None and observations.notes:
        text += "\n" + str(observations.notes)
    text = _FINE.sub(_unless_asked, _TAG.sub("", text))  # "throughput looks fine": not what is asked about
    text = _WORKER_ROLE.sub("worker", text)  # "the decode workers": a place in a disaggregated deployment
    text = _PRICE_PER_TOKEN.sub(" cost ", text)  # "$ per token" is what a token costs, not how long it takes
    found: set[Symptom] = set()
    text = _ANSWER_STARTS.sub(" first token ", text)  # the answer starting: each request's wait, not start-up
    text = _ANSWER_READY.sub(" response time ", text)  # the answer ready or loading: the request's time
    if _PROMPT_PHASE.search(text):  # the prompt's processing: TTFT, and its verb ("load") no longer says start-up
        found.add("ttft")
        text = _PROMPT_PHASE.sub(" prefill ", text)
    if _STARTUP_PHASE.search(text):
        found.add("startup")
    versions = len(set(_VERSION.findall(text))) >= 2 or _VERSION_PAIR.search(text) or _CHANGE.search(text)
    if versions:
        found.add("regression")
    if _FIGURE_ITL.search(text):
        found.add("itl")
    if _LOW_RATE.search(text):
        found.add("throughput")
    found |= {s for s, rx in _WORDS if rx.search(text)}
    if "regression" in found and not versions and not _WORSE.search(text) and _BETTER.search(text) and \
            not _REGRESSION_NOT_AFTER.search(_AFTER_CHANGE.sub(" ", text)):
        found.discard("regression")  # "after switching to X we serve 24k/s: is Y still the limit?": context, no slowdown
    if _LATENCY.search(text) and not found & {"ttft", "itl"}:
        found |= {"itl", "ttft"}
    found = _compared_only(text, found)
    measured = measured_symptoms(observations) if observations is not None else set()
    certain = set(found) | measured
    generic = bool(_GENERIC.search(text))
    if generic and not found & {"throughput", "ttft", "itl", "startup", "cost"}:
        found.add("throughput")  # "slow" alone: a rate, uncertainly
    found |= measured
    if found & set(_SPECIFIC) and "throughput" in found and "throughput" not in certain:
        found.discard("throughput")  # "TTFT is slow": slow says how, not what
    if found & {"regression", "errors"} == found and len(found) == 2:
        found.discard("regression")  # "refuses to start since this morning": a failure, not a slowdown after a change
    subjects = frozenset(k for k, rx in _ABOUT.items() if rx.search(text))
    minor = minor_terms(text, found, observations) if observations is not None else []
    found -= {s for s, _ in minor}
    return Asked(frozenset(found), subjects, text, frozenset(certain & found), minor=tuple(minor))


MINOR_SHARE = 0.10
"""A term of the request's time below this share of it cannot explain that time: removing it entirely would make each
request at most a tenth faster (end-to-end = time to first token + (tokens out - 1) x inter-token latency)."""

_COMPLAINT = re.compile(r"\bslow|\bhigh|\blong|\bspik|\bjump|\btoo\b|\bincreas|\bgrow|\bworse|\bbad\b|\bpoor|"
                        r"\bwhy\b|\bhuge|\bterribl|\bawful|\bunacceptab|\bballoon|\bdoubl|\btripl|\bregress|\bdegrad|"
                        r"\bblow|\bexplod|\bcompla|\bimprov|\breduc|\blower\b|\bcut\b", re.IGNORECASE)
"""Words that make a quoted figure the complaint ("TTFT is too high", "why is ITL 40 ms", "reduce the TTFT"), not
context quoted beside the figure asked about."""

_TERM_WORDS: dict[Symptom, re.Pattern[str]] = {
    "ttft": _WORDS[0][1],
    "itl": re.compile(f"{_WORDS[1][1].pattern}|{_FIGURE_ITL.pattern}", re.IGNORECASE),
}


def _singled_out(text: str, term: Symptom) -> bool:
    """Whether the question complains of this term itself: a sentence that names it also says it is slow, high or to
    be cut."""
    rx = _TERM_WORDS[term]
    return any(rx.search(s) and _COMPLAINT.search(s) for s in re.split(r"(?<=[.?!])\s+|\n", text))


def _typical(lat: object) -> float | None:
    if lat is None:
        return None
    for key in ("p50", "mean"):
        v = getattr(lat, key, None)
        if isinstance(v, (int, float)) and v > 0:
            return float(v)
    return None


def term_shares(observations: "Observations") -> list[tuple[str, float, float, float, str]]:
    """Each benchmark run's split of a request's time into its terms, from the figures the user gave: (run, TTFT ms,
    decode ms, end-to-end ms, the arithmetic). The decode term is (tokens out - 1) x inter-token latency where both
    are given, else the end-to-end time less the TTFT; the end-to-end time is the measured one where given, else the
    sum of the two terms."""
    out = []
    for b in observations.bench:
        ttft, itl, e2e = _typical(b.ttft), _typical(b.itl) or _typical(b.tpot), _typical(b.e2el)
        n = b.output_len
        if ttft is None:
            continue
        if itl is not None and n and n > 1:
            decode = (n - 1) * itl
            how = f"{ttft:,.0f} ms + ({n:,.0f} - 1) x {itl:.3g} ms"
        elif e2e is not None and e2e > ttft:
            decode = e2e - ttft
            how = f"{ttft:,.0f} ms + {decode:,.0f} ms of decode"
        else:
            continue
        total = e2e if e2e is not None and e2e >= ttft else ttft + decode
        how += f" = {ttft + decode:,.0f} ms" + (f"; measured end-to-end {e2e:,.0f} ms" if e2e is not None else "")
        out.append((b.name, ttft, decode, total, how))
    return out


def minor_terms(text: str, found: set[Symptom], observations: "Observations") -> list[tuple[Symptom, str]]:
    """The terms of the request's time the question quotes that cannot explain it: below `MINOR_SHARE` of each
    request's time in every run the user gave, not complained of themselves, while another term or the throughput is
    asked too. A TTFT of 0.15 s in a 4 s request quoted beside the per-token latency and the rate is context: what
    explains it alone changes the request's time by 4 %."""
    shares = term_shares(observations)
    if not shares:
        return []
    out: list[tuple[Symptom, str]] = []
    for term in ("ttft", "itl"):
        rest = found - {term} - {s for s, _ in out}
        if term not in found or not rest & {"ttft", "itl", "throughput"} or _singled_out(text, term):
            continue
        parts = []
        for name, ttft, decode, total, how in shares:
            part = ttft if term == "ttft" else decode
            if total <= 0 or part / total >= MINOR_SHARE:
                break
            parts.append(f"{SAY[term]} {part:,.0f} ms is {part / total:.1%} of a {total:,.0f} ms request in {name} "
                         f"({how})")
        else:
            out.append((term, "; ".join(parts)))
    return out


def measured_symptoms(observations: "Observations") -> set[Symptom]:
    """What the user measured and compares, as symptoms: two runs of one shape under two labels (before and after) are
    a regression; runs at different parallel layouts or concurrencies, with their rates, compare throughput; a
    baseline benchmark or log against the current one is a regression."""
    out: set[Symptom] = set()
    if _before_after(observations) or observations.baseline_log is not None:
        out.add("regression")
    rated = [r for r in observations.runs if r.total_tok_s or r.output_tok_s]
    if len({(r.tp, r.pp, r.ep, r.dp) for r in rated}) >= 2 or len({r.concurrency for r in rated}) >= 2:
        out.add("throughput")
    return out


def with_paths(a: Asked, view: "EvidenceView", findings: "Sequence[Finding]") -> Asked:
    """The reading with the paths from one symptom to another that the evidence shows: a slower decode step is lower
    throughput whatever the load; where requests wait in the engine's queue, what limits throughput or the decode
    step also sets the time to first token (the queue drains at that rate)."""
    via: set[tuple[Symptom, Symptom]] = {("itl", "throughput")}
    waiting = any(f.queue_wait for f in findings)
    for _ev, rep in view.probes("engine_config"):
        for e in rep.engines:
            if e.log is not None and (e.log.waiting_max or 0) > 0:
                waiting = True
            m = (e.metrics.metrics if e.metrics else {}) or {}
            for name in ("vllm:num_requests_waiting", "sglang:num_queue_reqs"):
                if name in m and (m[name].value or 0) > 0:
                    waiting = True
    if waiting:
        via |= {("throughput", "ttft"), ("itl", "ttft")}
    return Asked(a.symptoms, a.subjects, a.text, a.certain, frozenset(via), a.minor)
