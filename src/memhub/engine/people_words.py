"""The words a person names the people in their life with, in the four languages memhub
reads: the relation ("my girlfriend Anja", "mum Val", "meine freundin"), the owner ("my",
"mi", "mon", "mein") and the person naming themselves ("I'm Bernard", "je m'appelle").
Vocabulary only, patterns over folded text
(:func:`memhub.engine.grounding.fold`); :mod:`memhub.engine.relations` and
:mod:`memhub.engine.grounding` hold the rules."""

from __future__ import annotations

__all__ = ["KIND", "OWNER", "RELATION", "SELF_NAMED", "SOMEONE_OWNED"]

# Relations a person is named with.
RELATION = (
    r"(?:best friend|friend|girlfriend|boyfriend|partner|wife|husband|fianc\w*|spouse|son"
    r"|daughter|kids?|child|children|family|team|mum|mom|mother|mama|dad|father|papa"
    r"|petite?-fille|petit-fils|petits-enfants|nieta|nieto|enkelin|enkel"
    r"|parents?|brother|sister|sibling|twin|grandson|granddaughter|grandchild|grandma|grandpa"
    r"|grandmother|grandfather|gran\w*|nan|cousin|aunt|uncle|niece|nephew|stepson"
    r"|stepdaughter|boss|manager|colleague|coworker|co-worker|flatmate|roommate|housemate"
    r"|neighbou?r|mentor|coach|teacher|therapist|doctor|vet|dog|cat|puppy|kitten|esposa"
    r"|esposo|marido|mujer|novia|novio|pareja|hij[oa]|madre|padre|herman[oa]|abuel[oa]"
    r"|prim[oa]|ti[oa]|suegr[oa]|amig[oa]|jefe|jefa|femme|mari|copine|copain|fils|fille|mere"
    r"|pere|frere|soeur|grand-mere|grand-pere|cousine?|tante|oncle|amie?|patron|chef|frau"
    r"|mann|freundin|freund|sohn|tochter|mutter|vater|mutti|vati|bruder|schwester|oma|opa"
    r"|kollegin|kollege|chefin)"
)
# A word that says which one, before a relation: "my best friend Priya", "my little brother
# Tom" (optional, with its space).
KIND = (
    r"(?:(?:best|closest|oldest|little|big|older|younger|elder|twin|ex-?|new|old|mejor|nuev[oa]"
    r"|meilleure?|petite?|grande?|nouvelle|beste[nr]?|kleine[nr]?|neue[nr]?)\s+)?"
)
# The person as the owner: "my", "our" and their Spanish, French and German forms.
OWNER = (
    r"(?:my|our|mi|mis|nuestr[oa]s?|mon|ma|mes|notre|nos|mein|meine|meinen|meinem|meiner"
    r"|unser|unsere|unseren|unserem)"
)
# Someone of the person's: "my sister", "our new neighbour", "mi hermana".
SOMEONE_OWNED = rf"\b{OWNER}\s+(?:\w+\s+)?{RELATION}\b"

# The person saying their own name: the word after it is what they are called ("hi, I'm
# Bernard", "me llamo Mariana", "ich heiße Jörg"; a stored "The user is Bernard."). "I'm
# tired" gives "tired", which no fact opens with as a name, so a loose reading costs nothing.
SELF_NAMED = (
    r"(?:the user is|the user's name is|the user is named|the user is called|my name is"
    r"|my name's|name's|i'm|i am|im|call me|me llamo|mi nombre es|soy"
    r"|je m'appelle|je m appelle|m'appelle|moi c'est|mon nom est|je suis|ich bin|ich heisse"
    r"|mein name ist)"
)
