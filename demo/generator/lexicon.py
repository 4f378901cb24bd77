"""Our own small biomedical lexicon, shared by the demo corpus and the demo task generators.

The demo pretraining text and the demo benchmark tasks mention the same entities, so a
vocabulary learned on the corpus keeps these words whole and pretraining helps the tasks.
"""

DISEASES = [
    "hypertension",
    "asthma",
    "diabetes mellitus",
    "psoriasis",
    "sepsis",
    "pneumonia",
    "tuberculosis",
    "melanoma",
    "glioblastoma",
    "leukemia",
    "cardiomyopathy",
    "nephropathy",
    "hepatitis",
    "cirrhosis",
    "osteoporosis",
    "rheumatoid arthritis",
    "multiple sclerosis",
    "Parkinson disease",
    "Alzheimer disease",
    "schizophrenia",
    "epilepsy",
    "migraine",
    "atrial fibrillation",
    "heart failure",
    "colorectal cancer",
    "breast cancer",
    "lung adenocarcinoma",
    "pancreatitis",
    "anemia",
    "thrombocytopenia",
    "lupus nephritis",
    "Crohn disease",
    "ulcerative colitis",
    "bronchiolitis",
    "endocarditis",
    "meningitis",
]

CHEMICALS = [
    "metformin",
    "insulin",
    "aspirin",
    "warfarin",
    "heparin",
    "cisplatin",
    "doxorubicin",
    "tamoxifen",
    "paclitaxel",
    "methotrexate",
    "cyclosporine",
    "tacrolimus",
    "prednisone",
    "dexamethasone",
    "vancomycin",
    "amoxicillin",
    "ciprofloxacin",
    "rifampicin",
    "isoniazid",
    "lisinopril",
    "atorvastatin",
    "simvastatin",
    "clopidogrel",
    "furosemide",
    "haloperidol",
    "lithium",
    "valproate",
    "levetiracetam",
    "morphine",
    "fentanyl",
    "ketamine",
    "nicotine",
    "ethanol",
    "glucose",
    "cholesterol",
    "dopamine",
    "serotonin",
    "cortisol",
]

GENES = [
    "BRCA1",
    "BRCA2",
    "TP53",
    "EGFR",
    "KRAS",
    "BRAF",
    "PTEN",
    "MYC",
    "HER2",
    "VEGFA",
    "TNF",
    "IL6",
    "IL1B",
    "CDKN2A",
    "APOE",
    "ACE2",
    "JAK2",
    "STAT3",
    "MTOR",
    "AKT1",
    "PIK3CA",
    "NOTCH1",
    "SOX2",
    "CYP3A4",
    "CYP2D6",
    "ABCB1",
    "HLA-B",
    "INS",
    "LEP",
    "ALB",
]

SPECIES = [
    "Homo sapiens",
    "Mus musculus",
    "Rattus norvegicus",
    "Escherichia coli",
    "Staphylococcus aureus",
    "Mycobacterium tuberculosis",
    "Saccharomyces cerevisiae",
    "Danio rerio",
    "Drosophila melanogaster",
    "Plasmodium falciparum",
]

POPULATIONS = [
    "adults with type 2 diabetes",
    "children with asthma",
    "elderly patients",
    "pregnant women",
    "patients with heart failure",
    "smokers",
    "postmenopausal women",
    "patients undergoing surgery",
    "healthy volunteers",
    "outpatients with depression",
]

INTERVENTIONS = [
    "metformin",
    "placebo",
    "aerobic exercise",
    "cognitive behavioural therapy",
    "aspirin",
    "a low-sodium diet",
    "vitamin D supplementation",
    "insulin glargine",
    "acupuncture",
    "early mobilisation",
]

OUTCOMES = [
    "blood pressure",
    "mortality",
    "HbA1c",
    "hospital readmission",
    "quality of life",
    "pain scores",
    "length of stay",
    "bone mineral density",
    "exacerbation rate",
    "depressive symptoms",
]

ORGANS = ["liver", "kidney", "heart", "lung", "brain", "pancreas", "skin", "colon", "bone marrow"]

CELLS = ["T cells", "macrophages", "hepatocytes", "neurons", "fibroblasts", "cardiomyocytes", "B cells"]

GENERIC_NOUNS = [
    "patients",
    "cohort",
    "trial",
    "study",
    "analysis",
    "samples",
    "participants",
    "expression",
    "levels",
    "risk",
    "outcome",
    "treatment",
    "therapy",
    "dose",
    "response",
]

VERBS_INCREASE = ["increased", "elevated", "upregulated", "enhanced", "raised", "augmented", "stimulated", "boosted"]
VERBS_DECREASE = ["reduced", "decreased", "suppressed", "lowered", "attenuated", "diminished", "inhibited", "lessened"]

# The ten hallmarks of cancer (the HoC labels) and, for each, three processes that show it, each one
# word (frequent enough in the pretraining text to be one token of the demo vocabulary: a word cut
# into letters carries no meaning to transfer). The pretraining text describes each process in its
# hallmark's own words ("... supplied the tumour with new blood vessels"); the HoC-style task names
# the process in a frame shared by every hallmark, so the label of a held-out process is known only
# from the pretraining text.
HALLMARK_TERMS = {
    "activating invasion and metastasis": ["invasiveness", "metastasis", "dissemination"],
    "avoiding immune destruction": ["immunoevasion", "immunosuppression", "anergy"],
    "cellular energetics": ["glycolysis", "lipogenesis", "glutaminolysis"],
    "enabling replicative immortality": ["telomerase", "immortalisation", "telomeres"],
    "evading growth suppressors": ["derepression", "uninhibition", "desensitisation"],
    "genomic instability and mutation": ["aneuploidy", "hypermutation", "chromothripsis"],
    "inducing angiogenesis": ["angiogenesis", "neovascularisation", "vasculogenesis"],
    "resisting cell death": ["antiapoptosis", "chemoresistance", "anoikis"],
    "sustaining proliferative signaling": ["mitogenesis", "hyperproliferation", "autostimulation"],
    "tumor promoting inflammation": ["inflammation", "leukocytosis", "chemotaxis"],
}
HALLMARK_CONTEXTS = {
    "activating invasion and metastasis": [
        "{t} let tumour cells invade the {o} and seed distant sites.",
        "Through {t}, the tumour spread to lymph nodes and distant organs.",
    ],
    "avoiding immune destruction": [
        "{t} let tumour cells escape killing by cytotoxic T cells.",
        "Through {t}, the tumour hid from immune surveillance.",
    ],
    "cellular energetics": [
        "{t} rewired tumour metabolism to burn more glucose.",
        "Through {t}, tumour cells met their energy demands.",
    ],
    "enabling replicative immortality": [
        "{t} let tumour cells divide without limit.",
        "Through {t}, cancer cells became immortal in culture.",
    ],
    "evading growth suppressors": [
        "{t} freed tumour cells from the brakes on the cell cycle.",
        "Through {t}, cells ignored the signals that halt growth.",
    ],
    "genomic instability and mutation": [
        "{t} left the tumour genome riddled with mutations.",
        "Through {t}, tumour cells accumulated DNA damage.",
    ],
    "inducing angiogenesis": [
        "{t} supplied the tumour with new blood vessels.",
        "Through {t}, the tumour drew oxygen from fresh capillaries.",
    ],
    "resisting cell death": [
        "{t} protected tumour cells from apoptosis after {c} treatment.",
        "Through {t}, cancer cells survived lethal stress.",
    ],
    "sustaining proliferative signaling": [
        "{t} kept growth factor signals switched on in tumour cells.",
        "Through {t}, cancer cells kept dividing without mitogens.",
    ],
    "tumor promoting inflammation": [
        "{t} filled the tumour stroma with cytokines that fed its growth.",
        "Through {t}, immune cells around the tumour fuelled its growth.",
    ],
}

# How a clinical note says that a finding is present, absent or yet to be established, one word
# each. The PubMed and PMC text uses every one of these words often, but in contexts that say
# nothing of a finding ("The documented cases were reviewed"), so the vocabulary has them as
# tokens and a model pretrained on that text knows the words, not what they say of a diagnosis.
# The notes list findings under them ("PMH: known X, chronic Y"; "Denies X, without Y"), and the
# clinical inference task turns on them.
CUES_PRESENT = ["known", "chronic", "confirmed"]
CUES_ABSENT = ["denies", "without", "negative"]
CUES_UNCERTAIN = ["possible", "suspected", "probable"]


def held_out(words: list[str]) -> list[str]:
    """Every third word of a class: the tasks' dev and test splits draw their entities and
    trigger words from these, their training splits never do, so a fine-tuned model meets them
    first at test time and knows them only from the pretraining text."""
    return words[2::3]


def seen(words: list[str]) -> list[str]:
    """The rest of the class: what the tasks' training splits draw from."""
    held = set(held_out(words))
    return [w for w in words if w not in held]
