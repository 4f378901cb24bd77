"""Write the demo's raw pretraining sources: MEDLINE XML, PMC JATS articles, MIMIC-III notes.

Everything is composed from ``lexicon.py`` and our own sentence templates with a fixed
seed, in the exact formats of the real releases, so the corpus steps run on the demo as
they run on the full downloads. The files also carry the cases the filters must handle:
short and empty abstracts, non-English text, exact and near duplicates, a retracted
article, nested markup and MathML, a new version and deletions in the update file.

Usage: python demo/generator/corpus.py --out demo/raw_source
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import random
import tarfile
from pathlib import Path
from xml.sax.saxutils import escape

import lexicon as lx

SEED = 20240607
MEDLINE_DOCTYPE = (
    '<?xml version="1.0" encoding="utf-8"?>\n'
    '<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" '
    '"https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
)
MATHML_NS = "http://www.w3.org/1998/Math/MathML"
PMID_BASE = 31000000
BASELINE_SIZES = (300, 300)
UPDATE_NEW = 20


# --------------------------------------------------------------------------- sentences


def _sentence(rng: random.Random) -> str:
    d, c, g, s = (rng.choice(lx.DISEASES), rng.choice(lx.CHEMICALS), rng.choice(lx.GENES), rng.choice(lx.SPECIES))
    up, down = rng.choice(lx.VERBS_INCREASE), rng.choice(lx.VERBS_DECREASE)
    organ, cell, pop = rng.choice(lx.ORGANS), rng.choice(lx.CELLS), rng.choice(lx.POPULATIONS)
    interv, outcome = rng.choice(lx.INTERVENTIONS), rng.choice(lx.OUTCOMES)
    n, p = rng.randint(24, 2400), rng.choice(["0.001", "0.01", "0.03", "0.04"])
    templates = [
        f"Treatment with {c} {down} {g} expression in {cell} from {s}.",
        f"Patients with {d} showed {up} levels of {g} in the {organ}.",
        f"We enrolled {n} {pop} and randomly assigned them to {interv} or usual care.",
        f"The primary outcome was {outcome} at 12 months.",
        f"{c} {down} {outcome} compared with placebo (P = {p}).",
        f"Loss of {g} function is associated with {d} in {s}.",
        f"Mutations in {g} were detected in {rng.randint(5, 60)}% of tumours from patients with {d}.",
        f"Chronic exposure to {c} induced {d} in {s}.",
        f"Serum {c} concentrations were {up} in {pop} with {d}.",
        f"{g} and {rng.choice(lx.GENES)} interact to regulate {cell} survival in the {organ}.",
        f"In a cohort of {n} {pop}, {d} was associated with higher {outcome}.",
        f"{interv.capitalize()} {down} the risk of {d} among {pop}.",
        f"Knockdown of {g} {down} proliferation of {cell} exposed to {c}.",
        f"The combination of {c} and {rng.choice(lx.CHEMICALS)} caused {d} in {n} patients.",
        f"These findings suggest that {g} is a therapeutic target in {d}.",
        f"Adverse events included {d} and {rng.choice(lx.DISEASES)} after {c} therapy.",
    ]
    draw = rng.random()
    if draw < 0.1:
        sentence = _hallmark_sentence(rng)
    elif draw < 0.2:
        sentence = _direction_sentence(rng)
    elif draw < 0.35:
        sentence = _cue_sentence(rng)
    else:
        sentence = rng.choice(templates)
    return sentence[0].upper() + sentence[1:]


def _hallmark_sentence(rng: random.Random) -> str:
    """A process in its hallmark's own words: what the HoC-style task needs for held-out processes."""
    hallmark = rng.choice(list(lx.HALLMARK_TERMS))
    return rng.choice(lx.HALLMARK_CONTEXTS[hallmark]).format(
        t=rng.choice(lx.HALLMARK_TERMS[hallmark]), o=rng.choice(lx.ORGANS), c=rng.choice(lx.CHEMICALS)
    )


def _cue_sentence(rng: random.Random) -> str:
    """A clinical cue word where it says nothing of a finding: the vocabulary learns the word,
    the model learns nothing of what it says in a note."""
    cue = rng.choice(lx.CUES_PRESENT + lx.CUES_ABSENT + lx.CUES_UNCERTAIN)
    return rng.choice(
        [
            f"The {cue} cases were reviewed by two pathologists.",
            f"Data on {cue} samples were collected at {rng.randint(2, 12)} centres.",
            f"We list the {cue} values in Table {rng.randint(1, 5)}.",
        ]
    )


# A verb of change, and how the sentence goes on after one of increase (True) or decrease (False).
_CHANGE = {
    True: (lx.VERBS_INCREASE, "rose {k}-fold", "rose", "{k} times its baseline", "higher"),
    False: (lx.VERBS_DECREASE, "fell by {k}0%", "fell", "a {k}th of its baseline", "lower"),
}


def _direction_sentence(rng: random.Random) -> str:
    """A verb of change whose direction shows in what follows it: what the relation, QA and
    similarity tasks need for held-out verbs."""
    c, g, interv, outcome = (
        rng.choice(lx.CHEMICALS),
        rng.choice(lx.GENES),
        rng.choice(lx.INTERVENTIONS),
        rng.choice(lx.OUTCOMES),
    )
    verbs, levels, moved, level, side = _CHANGE[rng.random() < 0.5]
    verb, k = rng.choice(verbs), rng.randint(2, 9)
    return rng.choice(
        [
            f"{c} {verb} {g} expression, and {g} levels {levels.format(k=k)}.",
            f"{interv} {verb} {outcome}, which {moved} by {k}0%.",
            f"After {c}, {g} activity was {verb} to {level.format(k=k)}.",
            f"{c} {verb} {g}, so {g} levels were {side} than in untreated controls.",
        ]
    )


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _title(rng: random.Random) -> str:
    d, c, g = rng.choice(lx.DISEASES), rng.choice(lx.CHEMICALS), rng.choice(lx.GENES)
    return rng.choice(
        [
            f"Role of {g} in {d}: a cohort study",
            f"{c.capitalize()} for {d} in {rng.choice(lx.POPULATIONS)}: a randomised trial",
            f"{g} expression predicts response to {c} in {d}",
            f"Effect of {rng.choice(lx.INTERVENTIONS)} on {rng.choice(lx.OUTCOMES)} in {d}",
            f"{c.capitalize()}-induced {d} in {rng.choice(lx.SPECIES)}",
        ]
    )


# --------------------------------------------------------------------------- MEDLINE

FRENCH = (
    "Nous avons étudié les effets de la metformine chez les patients atteints de diabète. "
    "Les résultats montrent une diminution de la pression artérielle et une amélioration de la "
    "qualité de vie des patients. Le traitement a été bien toléré et les effets indésirables "
    "ont été rares dans les deux groupes de l'étude. "
) * 4
GERMAN = (
    "Wir untersuchten die Wirkung von Aspirin bei Patienten mit Herzinsuffizienz und einer "
    "Vorgeschichte von Vorhofflimmern. Die Behandlung war sicher und die Sterblichkeit der "
    "Patienten in der Studie war niedriger als in der Kontrollgruppe. "
) * 4


def _nested_markup(rng: random.Random) -> str:
    """Inline markup as MEDLINE carries it, nested two levels in places."""
    g, c = rng.choice(lx.GENES), rng.choice(lx.CHEMICALS)
    return (
        f"Expression of <i>{g}</i> rose to 10<sup>4</sup> copies and CO<sub>2</sub> output "
        f"fell, while <b>{c} (<i>K</i><sub><i>d</i></sub> 3 nM)</b> bound the receptor."
    )


def _mathml() -> str:
    return (
        f'The clearance followed <mml:math xmlns:mml="{MATHML_NS}"><mml:mrow><mml:msup>'
        "<mml:mi>e</mml:mi><mml:mrow><mml:mo>-</mml:mo><mml:mi>k</mml:mi><mml:mi>t</mml:mi>"
        "</mml:mrow></mml:msup></mml:mrow></mml:math> kinetics in all patients."
    )


def _citation(
    pmid: int,
    version: int,
    title: str,
    sections: list[tuple[str | None, str | None, str]],
    language: str = "eng",
    pub_types: tuple[str, ...] = ("Journal Article",),
    status: str = "MEDLINE",
    year: int = 2019,
) -> str:
    """One PubmedArticle element; section texts are already XML (may hold markup)."""
    if sections:
        parts = []
        for label, cat, text in sections:
            attrs = f' Label="{label}" NlmCategory="{cat}"' if label else ""
            parts.append(f"          <AbstractText{attrs}>{text}</AbstractText>")
        abstract = "        <Abstract>\n" + "\n".join(parts) + "\n        </Abstract>\n"
    else:
        abstract = ""
    uis = {
        "Journal Article": "D016428",
        "Randomized Controlled Trial": "D016449",
        "Retracted Publication": "D016441",
        "Review": "D016454",
    }
    ptypes = "\n".join(f'          <PublicationType UI="{uis[p]}">{p}</PublicationType>' for p in pub_types)
    return (
        "  <PubmedArticle>\n"
        f'    <MedlineCitation Status="{status}" Owner="NLM" IndexingMethod="Automated">\n'
        f'      <PMID Version="{version}">{pmid}</PMID>\n'
        f"      <DateCompleted><Year>{year}</Year><Month>03</Month><Day>14</Day></DateCompleted>\n"
        '      <Article PubModel="Print-Electronic">\n'
        "        <Journal>\n"
        '          <ISSN IssnType="Electronic">1234-5678</ISSN>\n'
        '          <JournalIssue CitedMedium="Internet"><Volume>12</Volume><Issue>3</Issue>'
        f"<PubDate><Year>{year}</Year><Month>Mar</Month></PubDate></JournalIssue>\n"
        "          <Title>Journal of Demonstration Medicine</Title>\n"
        "          <ISOAbbreviation>J Demo Med</ISOAbbreviation>\n"
        "        </Journal>\n"
        f"        <ArticleTitle>{title}</ArticleTitle>\n"
        "        <Pagination><MedlinePgn>101-110</MedlinePgn></Pagination>\n"
        f"{abstract}"
        '        <AuthorList CompleteYN="Y">\n'
        '          <Author ValidYN="Y"><LastName>Doe</LastName><ForeName>Jane</ForeName>'
        "<Initials>J</Initials></Author>\n"
        "        </AuthorList>\n"
        f"        <Language>{language}</Language>\n"
        f"        <PublicationTypeList>\n{ptypes}\n        </PublicationTypeList>\n"
        "      </Article>\n"
        "      <MedlineJournalInfo><Country>England</Country><MedlineTA>J Demo Med</MedlineTA>"
        "<NlmUniqueID>9999999</NlmUniqueID></MedlineJournalInfo>\n"
        "    </MedlineCitation>\n"
        "    <PubmedData>\n"
        "      <PublicationStatus>ppublish</PublicationStatus>\n"
        f'      <ArticleIdList><ArticleId IdType="pubmed">{pmid}</ArticleId></ArticleIdList>\n'
        "    </PubmedData>\n"
        "  </PubmedArticle>\n"
    )


def _regular_sections(rng: random.Random, structured: bool) -> list[tuple[str | None, str | None, str]]:
    if not structured:
        return [(None, None, escape(_paragraph(rng, rng.randint(9, 16))))]
    return [
        ("BACKGROUND", "BACKGROUND", escape(_paragraph(rng, rng.randint(2, 4)))),
        ("METHODS", "METHODS", escape(_paragraph(rng, rng.randint(3, 5)))),
        ("RESULTS", "RESULTS", escape(_paragraph(rng, rng.randint(3, 5)))),
        ("CONCLUSIONS", "CONCLUSIONS", escape(_paragraph(rng, rng.randint(1, 2)))),
    ]


def medline_files(rng: random.Random) -> dict[str, bytes]:
    """The two baseline files and one update file, as uncompressed XML bytes."""
    records: list[list[str]] = [[], []]
    pmid = PMID_BASE
    kept: dict[int, tuple[str, list]] = {}
    for f, size in enumerate(BASELINE_SIZES):
        for i in range(size):
            pmid += 1
            title = escape(_title(rng))
            sections = _regular_sections(rng, structured=rng.random() < 0.4)
            pub_types: tuple[str, ...] = ("Journal Article",)
            language = "eng"
            if f == 0 and i == 10:  # nested inline markup (pubmed_parser drops part of it)
                sections = [(None, None, escape(_paragraph(rng, 8)) + " " + _nested_markup(rng))]
            elif f == 0 and i == 11:  # MathML in an abstract
                sections = [(None, None, escape(_paragraph(rng, 8)) + " " + _mathml())]
            elif f == 0 and i in (20, 21, 22):  # very short abstracts
                sections = [(None, None, escape(_paragraph(rng, 2)))]
            elif f == 0 and i == 23:  # citation without an abstract
                sections = []
            elif f == 0 and i == 30:  # non-English article
                sections, language = [(None, None, FRENCH.strip())], "fre"
            elif f == 1 and i == 30:
                sections, language = [(None, None, GERMAN.strip())], "ger"
            elif f == 0 and i == 40:  # retracted
                pub_types = ("Journal Article", "Retracted Publication")
            elif f == 1 and i == 50:  # exact duplicate of an earlier abstract, new PMID
                title, sections = kept[5]
            elif f == 1 and i == 51:  # near duplicate: a few words changed, sections kept
                title, src = kept[6]
                label, cat, text = src[-1]
                words = text.split()
                words[0], words[-2] = "Markedly,", "cohorts"
                sections = [*src[:-1], (label, cat, " ".join(words))]
            if f == 0 and i in (5, 6):
                kept[i] = (title, sections)
            records[f].append(_citation(pmid, 1, title, sections, language, pub_types))
    last_baseline = pmid
    update: list[str] = []
    # a corrected re-issue of an existing record (same PMID and Version) replaces it
    update.append(
        _citation(
            PMID_BASE + 100,
            1,
            "Corrected title: metformin and HbA1c in adults",
            [(None, None, escape(_paragraph(rng, 12)))],
            status="MEDLINE",
        )
    )
    # a second version of another record (versioned citation); the highest version wins
    update.append(
        _citation(
            PMID_BASE + 200,
            2,
            "Version 2: TP53 and breast cancer",
            [(None, None, escape(_paragraph(rng, 12)))],
            status="PubMed-not-MEDLINE",
        )
    )
    for _ in range(UPDATE_NEW):
        pmid += 1
        update.append(
            _citation(pmid, 1, escape(_title(rng)), _regular_sections(rng, structured=rng.random() < 0.4), year=2025)
        )
    deletes = (PMID_BASE + 150, PMID_BASE + 450, last_baseline + 3)
    delete_block = (
        "  <DeleteCitation>\n"
        + "".join(f'    <PMID Version="1">{p}</PMID>\n' for p in deletes)
        + "  </DeleteCitation>\n"
    )

    def wrap(body: str) -> bytes:
        return (MEDLINE_DOCTYPE + "<PubmedArticleSet>\n" + body + "</PubmedArticleSet>\n").encode("utf-8")

    return {
        "baseline/pubmed26n0001.xml.gz": wrap("".join(records[0])),
        "baseline/pubmed26n0002.xml.gz": wrap("".join(records[1])),
        "updatefiles/pubmed26n0003.xml.gz": wrap("".join(update) + delete_block),
    }


# --------------------------------------------------------------------------- PMC JATS

LICENCES = {
    "by": (
        "https://creativecommons.org/licenses/by/4.0/",
        "This is an open access article under the CC BY 4.0 license.",
    ),
    "by-nc": (
        "https://creativecommons.org/licenses/by-nc/4.0/",
        "This is an open access article under the CC BY-NC 4.0 license.",
    ),
}
PMC_ARTICLES = 20


def _jats_article(rng: random.Random, k: int, licence: str, retracted: bool) -> str:
    pmcid, pmid = 8100000 + k, 36000000 + k
    href, lic_text = LICENCES[licence]
    title = escape(_title(rng))
    related = (
        '<related-article related-article-type="retraction-forward" ext-link-type="pmc" '
        f'xlink:href="PMC{pmcid + 500}"/>'
        if retracted
        else ""
    )
    secs = []
    for name in ("Introduction", "Methods", "Results", "Discussion"):
        paras = "".join(
            f"<p>{escape(_paragraph(rng, rng.randint(4, 7)))} "
            f'<xref ref-type="bibr" rid="B{rng.randint(1, 3)}">{rng.randint(1, 3)}</xref></p>'
            for _ in range(rng.randint(2, 3))
        )
        secs.append(f'<sec id="s{name.lower()}"><title>{name}</title>{paras}</sec>')
    secs[2] = secs[2].replace(
        "</sec>",
        '<fig id="F1"><label>Figure 1</label><caption><title>Expression levels.</title>'
        f'<p>{escape(_sentence(rng))}</p></caption><graphic xlink:href="fig1.jpg"/></fig>'
        '<table-wrap id="T1"><label>Table 1</label><caption><p>Baseline characteristics.</p></caption>'
        "<table><thead><tr><th>Group</th><th>n</th></tr></thead>"
        "<tbody><tr><td>Treated</td><td>42</td></tr><tr><td>Control</td><td>40</td></tr></tbody></table>"
        "</table-wrap>"
        '<disp-formula id="E1"><mml:math><mml:mi>y</mml:mi><mml:mo>=</mml:mo><mml:mi>a</mml:mi>'
        "<mml:mi>x</mml:mi></mml:math></disp-formula></sec>",
        1,
    )
    refs = "".join(
        f'<ref id="B{i}"><element-citation publication-type="journal"><person-group><name>'
        f"<surname>Smith</surname><given-names>A</given-names></name></person-group>"
        f"<article-title>{escape(_title(rng))}</article-title><source>Demo J</source><year>2018</year>"
        "</element-citation></ref>"
        for i in (1, 2, 3)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.3 20210610//EN" '
        '"JATS-archivearticle1-3.dtd">\n'
        '<article xmlns:mml="http://www.w3.org/1998/Math/MathML" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'xmlns:ali="http://www.niso.org/schemas/ali/1.0/" article-type="research-article" dtd-version="1.3">\n'
        '<front><journal-meta><journal-id journal-id-type="nlm-ta">Demo J</journal-id>'
        "<journal-title-group><journal-title>Demo Journal</journal-title></journal-title-group></journal-meta>\n"
        "<article-meta>"
        f'<article-id pub-id-type="pmid">{pmid}</article-id>'
        f'<article-id pub-id-type="pmc">PMC{pmcid}</article-id>'
        f'<article-id pub-id-type="doi">10.5555/demo.{k}</article-id>'
        f"<title-group><article-title>{title}</article-title></title-group>"
        '<pub-date pub-type="epub"><year>2021</year></pub-date>'
        f'<permissions><license xlink:href="{href}"><ali:license_ref>{href}</ali:license_ref>'
        f"<license-p>{lic_text}</license-p></license></permissions>"
        f"{related}"
        f"<abstract><p>{escape(_paragraph(rng, 5))}</p></abstract>"
        "</article-meta></front>\n"
        f"<body>{''.join(secs)}</body>\n"
        f"<back><ref-list><title>References</title>{refs}</ref-list></back>\n"
        "</article>\n"
    )


def _licence(k: int) -> str:
    return "by-nc" if k % 3 == 2 else "by"


def pmc_articles(rng: random.Random) -> dict[str, bytes]:
    out = {}
    for k in range(PMC_ARTICLES):
        xml = _jats_article(rng, k, _licence(k), retracted=(k == 7))
        out[f"oa_demo/PMC{8100000 + k}.nxml"] = xml.encode("utf-8")
    return out


# Article 4's retraction is known only to the file list, as for articles retracted after deposit.
LIST_ONLY_RETRACTED = 4


def pmc_filelist() -> bytes:
    """The CSV file list published beside the bulk packages (licence and retraction per article)."""
    lines = ["Article File,Article Citation,AccessionID,LastUpdated (YYYY-MM-DD HH:MM:SS),PMID,License,Retracted"]
    for k in range(PMC_ARTICLES):
        lic = "CC BY-NC" if _licence(k) == "by-nc" else "CC BY"
        retracted = "yes" if k in (7, LIST_ONLY_RETRACTED) else "no"
        lines.append(
            f"oa_demo/PMC{8100000 + k}.nxml,Demo J. 2021; 12:{k + 1},PMC{8100000 + k},"
            f"2024-05-0{1 + k % 9} 10:00:00,{36000000 + k},{lic},{retracted}"
        )
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- MIMIC-III

MIMIC_COLUMNS = [
    "ROW_ID",
    "SUBJECT_ID",
    "HADM_ID",
    "CHARTDATE",
    "CHARTTIME",
    "STORETIME",
    "CATEGORY",
    "DESCRIPTION",
    "CGID",
    "ISERROR",
    "TEXT",
]
MIMIC_NOTES = 500
IMPRESSIONS = [
    "No acute cardiopulmonary process.",
    "Small left pleural effusion.",
    "Interval improvement of the right lower lobe opacity.",
]


def _history(rng: random.Random) -> str:
    """Findings present, absent and to be established, each with its own kind of cue and a
    follow-up that only fits that kind: what the clinical inference task needs for held-out cues."""
    d = rng.sample(lx.DISEASES, 6)
    present, absent, uncertain = (rng.sample(cues, 2) for cues in (lx.CUES_PRESENT, lx.CUES_ABSENT, lx.CUES_UNCERTAIN))
    return (
        f"PMH: {present[0]} {d[0]}, {present[1]} {d[1]}, both on the problem list. "
        f"ROS: {absent[0]} {d[2]}, {absent[1]} {d[3]}, neither ever diagnosed. "
        f"Admitted for {uncertain[0]} {d[4]}, {uncertain[1]} {d[5]}, workup pending. "
        f"Currently on {rng.choice(lx.CHEMICALS)}."
    )


def _note(rng: random.Random, category: str) -> str:
    d, c = rng.choice(lx.DISEASES), rng.choice(lx.CHEMICALS)
    name = rng.choice(["[**Known lastname 1234**]", "[**First Name8 (NamePattern2) 567**]", "[**Last Name (un) 89**]"])
    date = f"[**{rng.randint(2100, 2190)}-{rng.randint(1, 12)}-{rng.randint(1, 28)}**]"
    hosp = rng.choice(["[**Hospital1 18**]", "[**Hospital 1474**]", "[**Hospital3 2358**]"])
    if category == "Discharge summary":
        return (
            f"Admission Date:  {date}              Discharge Date:   {date}\n\n"
            f"Date of Birth:  [**2080-1-1**]             Sex:   {rng.choice('MF')}\n\n"
            f"Service: MEDICINE\n\nHISTORY OF PRESENT ILLNESS:\n"
            f"Mr. {name} is a {rng.randint(30, 89)} year old man with {d} admitted to {hosp} "
            f"after {rng.choice(['a fall', 'chest pain', 'shortness of breath', 'fever'])}.\n"
            f"{_history(rng)} {_history(rng)}\n{_paragraph(rng, 2)}\n\n"
            f"DISCHARGE MEDICATIONS:\n1. {c} {rng.randint(1, 50)} mg PO daily\n"
            f"2. {rng.choice(lx.CHEMICALS)} as needed\n\n"
            f"Followup Instructions:\nPlease follow up with Dr. {name} on {date}.\n"
        )
    if category == "Radiology":
        return (
            f"{date} 10:15 AM\n CHEST (PORTABLE AP)    Clip # [**Clip Number (Radiology) 1234**]\n"
            f"     Reason: {rng.choice(lx.CUES_UNCERTAIN)} {d}\n"
            "______________________________________________________________________________\n"
            f" FINAL REPORT\n IMPRESSION: {rng.choice(IMPRESSIONS)}\n"
        )
    if category == "ECG":
        return (
            rng.choice(
                [
                    "Sinus rhythm. Normal ECG.",
                    "Atrial fibrillation with rapid ventricular response.",
                    "Sinus tachycardia. Nonspecific ST-T wave changes.",
                ]
            )
            + "\n"
        )
    return (
        f"Pt is a {rng.randint(30, 89)} yo with {d}. {rng.choice(['Neuro', 'CV', 'Resp'])}: "
        f"{_history(rng)}\n{_sentence(rng)}\nPlan: continue {c}, monitor closely, family ({name}) updated "
        f"at bedside.\n"
    )


def mimic_csv(rng: random.Random) -> bytes:
    # As in the release: strings quoted, numbers bare, missing values empty and unquoted.
    def cell(v: object) -> str:
        if v is None:
            return ""
        if isinstance(v, int):
            return str(v)
        return '"' + str(v).replace('"', '""') + '"'

    lines = [",".join(cell(c) for c in MIMIC_COLUMNS)]
    categories = ["Discharge summary", "Radiology", "Nursing", "Nursing/other", "ECG", "Physician "]
    weights = [3, 3, 2, 2, 2, 1]
    for row in range(1, MIMIC_NOTES + 1):
        category = rng.choices(categories, weights)[0]
        chartdate = f"21{rng.randint(10, 90)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        timed = category != "Discharge summary"
        lines.append(
            ",".join(
                cell(v)
                for v in [
                    row,
                    10000 + rng.randint(1, 80),
                    100000 + rng.randint(1, 150) if row % 17 else None,
                    chartdate,
                    f"{chartdate} 10:15:00" if timed else None,
                    f"{chartdate} 11:02:00" if timed else None,
                    category,
                    "Report" if category != "Radiology" else "CHEST (PORTABLE AP)",
                    14000 + rng.randint(1, 300) if timed else None,
                    1 if row % 40 == 13 else None,
                    _note(rng, category),
                ]
            )
        )
    return ("\n".join(lines) + "\n").encode("utf-8")


# --------------------------------------------------------------------------- writing


def _gzip(data: bytes) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
        gz.write(data)
    return out.getvalue()


def _tar_gz(members: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in sorted(members.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), 1700000000, 0o644
            tar.addfile(info, io.BytesIO(data))
    return _gzip(raw.getvalue())


def generate() -> dict[str, bytes]:
    """Relative path under the output directory -> file content."""
    rng = random.Random(SEED)
    files: dict[str, bytes] = {}
    for name, xml in medline_files(rng).items():
        files[f"pubmed/{name}"] = _gzip(xml)
    files["pmc/oa_demo.tar.gz"] = _tar_gz(pmc_articles(rng))
    files["pmc/oa_demo.filelist.csv"] = pmc_filelist()
    files["mimic/NOTEEVENTS.csv.gz"] = _gzip(mimic_csv(rng))
    for name in list(files):
        if name.startswith(("pubmed/", "pmc/")):
            base = name.rsplit("/", 1)[1]
            files[f"{name}.md5"] = f"MD5({base})= {hashlib.md5(files[name]).hexdigest()}\n".encode()
    sha = hashlib.sha256(files["mimic/NOTEEVENTS.csv.gz"]).hexdigest()
    files["mimic/SHA256SUMS.txt"] = f"{sha} NOTEEVENTS.csv.gz\n".encode()
    return files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="output directory (demo/raw_source)")
    args = ap.parse_args()
    for name, data in generate().items():
        path = args.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


if __name__ == "__main__":
    main()
